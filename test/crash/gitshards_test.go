package crash_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/apiaryhq/apiary/internal/shard"
)

// shardLeaseNS holds the Leases of the crash suite's shards.
const shardLeaseNS = "crash-shards"

// TestGitModeSurvivesKillsOfTwoShards is TestGitModeSurvivesKills with two
// shards as two manager processes committing to one branch: each has a
// Colony of its own (a fleet in a namespace whose Colony hashes to it),
// and every change step changes both. The kills take every kind of
// TestGitModeSurvivesKills in turn on shard 0, then on shard 1, while the
// other shard keeps committing (it is killed too, at random, when the
// victim changes). Each shard pushes to its own name of the repository,
// so that a stalled push or fetch is the victim's. At the end the same
// checks hold for both fleets, and for the one branch: fsck clean, one
// line of commits, no empty commit, no content written twice, no force
// push, and Flux applied its head.
func TestGitModeSurvivesKillsOfTwoShards(t *testing.T) {
	const shards = 2
	g := NewWithT(t)
	began := time.Now()
	rig := startGitRig(t)
	r := newRNG(3)
	if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: shardLeaseNS}}); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	kills := cfg.gitShardKills
	type member struct {
		f        *fleet
		inv      *invariants
		colony   []string
		steps    []func() error
		m        *manager
		checkout string
		repo     string
	}
	members := make([]*member, shards)
	for i := range shards {
		f := newFleetWhere(t, fmt.Sprintf("gs%d", i), max(cfg.gitColony/shards, 2), max(cfg.gitColony/shards/2, 1),
			func(ns string) bool { return shard.Desired(ns+"/"+colonyName, shards) == i })
		f.maxGPUs = 1
		mb := &member{f: f, inv: watchInvariants(t, f.ns, f.capacity), checkout: filepath.Join(workDir, "checkout-shard-"+strconv.Itoa(i)),
			repo: rig.alias(t, fmt.Sprintf("apiary-%d.git", i))}
		flags := append(rig.managerFlagsOn(mb.checkout, mb.repo),
			"--shards="+strconv.Itoa(shards), "--shard="+strconv.Itoa(i),
			// Short Leases keep the restarts of the victim quick; shorter
			// ones lose their renewals on a loaded CI machine.
			"--leader-election-namespace="+shardLeaseNS, "--leader-election-lease-duration=8s")
		mb.m = newManagerLog(t, fmt.Sprintf("%s-shard-%d.log", t.Name(), i), flags...)
		f.planWorkspaces(max(cfg.gitWorkspaces/shards, kills/3), r)
		mb.colony = f.colony
		mb.steps = f.gitSteps(kills, &mb.colony)
		f.createColony()
		members[i] = mb
	}

	kinds := map[string]int{}
	for i := range kills {
		victim := (i / len(gitKillKinds)) % shards
		kind := gitKillKinds[i%len(gitKillKinds)]
		for j, mb := range members {
			switch {
			case j != victim && !mb.m.Running():
				mb.m.Start()
			case j == victim && mb.m.Running():
				mb.m.Kill() // the other shard was the victim so far
				kinds["random"]++
			}
		}
		v := members[victim]
		wait := rig.armOn(t, v.m, kind, v.checkout, v.repo, r)
		for j, mb := range members {
			g.Expect(mb.steps[i]()).To(Succeed(), "change %d of shard %d", i, j)
		}
		g.Expect(wait()).To(Succeed(), "kill %d (%s) of shard %d", i, kind, victim)
		v.m.Kill()
		kinds[fmt.Sprintf("%s@%d", kind, victim)]++
	}
	for _, mb := range members {
		if !mb.m.Running() {
			mb.m.Start()
		}
	}

	checked := 0
	settle(t, 5*time.Minute, func(g Gomega) {
		checked = 0
		for _, mb := range members {
			checked += mb.f.converged(g, mb.inv, mb.colony)
			checked += mb.f.committed(g, rig, mb.colony)
		}
	})
	starts, killed := 0, 0
	for i, mb := range members {
		g.Expect(mb.inv.Violations()).To(BeEmpty(), "invariants of shard %d's fleet broken while the shards were killed", i)
		s, k, selfExits := mb.m.Counts()
		g.Expect(selfExits).To(BeEmpty(), "shard %d exited by itself", i)
		starts, killed = starts+s, killed+k
	}
	h, err := rig.checkHistory()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h.problems).To(BeEmpty(), "the repository's history")
	t.Logf("git mode, %d shards on one branch: %d kills survived (%d starts; by kind@shard %v), %d+%d workspaces; "+
		"%d commits, %d pushes (force pushes: 0), %d file changes, git fsck clean, empty commits: 0, content written twice: 0; "+
		"%d objects checked at the end, lost or duplicated: 0 (%s)",
		shards, killed, starts, kinds, len(members[0].f.workspaces), len(members[1].f.workspaces),
		h.commits, h.pushes, h.filesChanged, checked, time.Since(began).Round(time.Second))
	for _, mb := range members {
		mb.f.cleanUp()
	}
}
