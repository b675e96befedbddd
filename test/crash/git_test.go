package crash_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	"github.com/apiaryhq/apiary/internal/crashpoint"
	"github.com/apiaryhq/apiary/internal/testenv"
)

// The ways TestGitModeSurvivesKills kills the manager, taken in turn.
const (
	// killRandom kills at a random moment, whatever the manager does.
	killRandom = "random"
	// killCommit kills with the changes written and staged in the clone,
	// before the commit is made.
	killCommit = "commit"
	// killPush kills between the commit and its push.
	killPush = "push"
	// killPushed kills after the push landed, before the manager
	// recorded it.
	killPushed = "pushed"
	// killReceive kills during a push that the server carried out but
	// has not answered yet.
	killReceive = "receive"
	// killClone removes the clone and kills during the new clone's first
	// fetch, with half a pack received.
	killClone = "clone"
)

var gitKillKinds = []string{killRandom, killCommit, killPush, killPushed, killReceive, killClone}

// markerTimeout bounds the wait for the manager to reach the point of a
// kill: each run is given something to commit, so it must get there.
const markerTimeout = 90 * time.Second

// TestGitModeSurvivesKills runs a Colony and workspaces in Git mode, Flux
// applying what Apiary commits, and kills the manager cfg.gitKills times,
// each time at another of the places where a Git delivery is half done
// (see gitKillKinds), while workspaces roll out, change in place and go,
// and the Colony grows and shrinks: each run gets one such change. At the
// end the repository must be consistent (fsck clean, linear, no empty
// commit, no content written twice, no force push), hold every desired
// object and nothing else, Flux must have applied its head, and what a user
// sees must be as in direct mode.
func TestGitModeSurvivesKills(t *testing.T) {
	g := NewWithT(t)
	began := time.Now()
	rig := startGitRig(t)
	r := newRNG(2)
	f := newFleet(t, "g", cfg.gitColony, max(cfg.gitColony/2, 1))
	// Every GPU workspace fits, so that each change of a step is a change
	// of the repository: every run reaches its commit.
	f.maxGPUs = 1
	inv := watchInvariants(t, f.ns, f.capacity)
	checkout := filepath.Join(workDir, "checkout")
	m := newManager(t, rig.managerFlags(checkout)...)
	f.planWorkspaces(cfg.gitWorkspaces, r)
	colony := f.colony
	steps := f.gitSteps(cfg.gitKills, &colony)

	kinds := map[string]int{}
	f.createColony()
	for i := range cfg.gitKills {
		kind := gitKillKinds[i%len(gitKillKinds)]
		wait := rig.arm(t, m, kind, checkout, r)
		g.Expect(steps[i]()).To(Succeed(), "change %d", i)
		g.Expect(wait()).To(Succeed(), "kill %d (%s)", i, kind)
		m.Kill()
		kinds[kind]++
	}
	m.Start()

	checked := 0
	settle(t, 5*time.Minute, func(g Gomega) {
		checked = f.converged(g, inv, colony)
		checked += f.committed(g, rig, colony)
	})
	g.Expect(inv.Violations()).To(BeEmpty(), "invariants broken while the manager was killed")
	starts, kills, selfExits := m.Counts()
	g.Expect(selfExits).To(BeEmpty(), "the manager exited by itself")
	h, err := rig.checkHistory()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h.problems).To(BeEmpty(), "the repository's history")
	events, objects, peak := inv.Figures()
	t.Logf("git mode: %d kills survived (%d starts; by kind %v), %d workspaces over %d clusters, Colony of %d→%d; "+
		"%d commits, %d pushes (force pushes: 0), %d file changes, git fsck clean, empty commits: 0, content written twice: 0; "+
		"%d objects checked at the end, %d objects and %d events watched, duplicates found: %d, Failed phases: 0, over-admission: 0 (%s); %s",
		kills, starts, kinds, len(f.workspaces), len(f.clusters), len(f.colony), len(colony),
		h.commits, h.pushes, h.filesChanged, checked, objects, events, len(inv.Violations()), peak, time.Since(began).Round(time.Second))
	f.cleanUp()
}

// arm starts the manager ready to be killed the way kind says and returns
// the wait for that moment.
func (rig *gitRig) arm(t testing.TB, m *manager, kind, checkout string, r *rng) func() error {
	t.Helper()
	return rig.armOn(t, m, kind, checkout, apiaryRepo, r)
}

// armOn is arm for a manager that pushes to the repository's name repo.
func (rig *gitRig) armOn(t testing.TB, m *manager, kind, checkout, repo string, r *rng) func() error {
	t.Helper()
	pause := func(point string) func() error {
		m.Start(crashpoint.EnvPause + "=" + point)
		return func() error { return m.WaitMarker(point, markerTimeout) }
	}
	stalled := func(reached <-chan struct{}, what string) error {
		select {
		case <-reached:
			return nil
		case <-time.After(markerTimeout):
			return fmt.Errorf("no %s reached the Git server within %s", what, markerTimeout)
		}
	}
	switch kind {
	case killCommit:
		return pause(crashpoint.GitCommit)
	case killPush:
		return pause(crashpoint.GitPush)
	case killPushed:
		return pause(crashpoint.GitPushed)
	case killReceive:
		reached := rig.server.Stall(testenv.ReceivePack, "/"+repo)
		m.Start()
		return func() error { return stalled(reached, "push") }
	case killClone:
		if err := os.RemoveAll(checkout); err != nil {
			t.Fatal(err)
		}
		reached := rig.server.Stall(testenv.UploadPack, "/"+repo)
		m.Start(crashpoint.EnvPoints + "=" + crashpoint.GitCloneFetch)
		return func() error {
			if err := m.WaitMarker(crashpoint.GitCloneFetch, markerTimeout); err != nil {
				return err
			}
			return stalled(reached, "fetch of the new clone")
		}
	default:
		m.Start()
		return func() error {
			time.Sleep(r.between(500*time.Millisecond, 3*time.Second))
			return nil
		}
	}
}

// gitSteps spreads the fleet's life over n changes: the first third
// creates the workspaces, the second updates half of them in place (and
// grows the control planes of the clusters without workspaces), the last
// deletes a third of them, or one per step if that is more (and removes
// half of those clusters from the Colony). colony follows the Colony's
// clusters. The fleet needs at least n/3 workspaces.
func (f *fleet) gitSteps(n int, colony *[]string) []func() error {
	steps := make([]func() error, n)
	third := max(n/3, 1)
	grown := map[string]int{}
	for _, c := range f.colony[len(f.clusters):] {
		grown[c] = 2
	}
	slice := func(items []*workspace, step, of int) []*workspace {
		lo, hi := step*len(items)/of, (step+1)*len(items)/of
		return items[lo:hi]
	}
	// No step without a workspace to change.
	updates := f.workspaces[:max(len(f.workspaces)/2, third)]
	deletes := f.workspaces[len(f.workspaces)-max(len(f.workspaces)/3, n-2*third):]
	for i := range n {
		switch {
		case i < third:
			batch := slice(f.workspaces, i, third)
			steps[i] = func() error { return each(batch, f.create) }
		case i < 2*third:
			batch := slice(updates, i-third, third)
			first := i == third
			steps[i] = func() error {
				if first {
					if err := retryUpdate(func() error { return f.setColony(*colony, grown) }); err != nil {
						return err
					}
				}
				return each(batch, func(w *workspace) error { return retryUpdate(func() error { return f.update(w) }) })
			}
		default:
			batch := slice(deletes, i-2*third, n-2*third)
			first := i == 2*third
			steps[i] = func() error {
				if first {
					*colony = (*colony)[:len(*colony)-(len(*colony)-len(f.clusters)+1)/2]
					if err := retryUpdate(func() error { return f.setColony(*colony, grown) }); err != nil {
						return err
					}
				}
				return each(batch, f.remove)
			}
		}
	}
	return steps
}

func each(ws []*workspace, do func(*workspace) error) error {
	for _, w := range ws {
		if err := do(w); err != nil {
			return err
		}
	}
	return nil
}

// committed checks the branch head against the intent and Flux against
// the head, and returns how many files it checked: the Kustomization
// applied the head; the namespace's ServiceSet and ClusterDeployment files
// are exactly those of the live workspaces, their prerequisites and the
// Colony's clusters; and the cluster holds exactly the objects of those
// files.
func (f *fleet) committed(g Gomega, rig *gitRig, colony []string) int {
	ctx := context.Background()
	head, err := rig.head()
	g.Expect(err).NotTo(HaveOccurred())
	applied, ready, err := rig.fluxApplied(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ready).To(BeTrue(), "the Kustomization is Ready")
	g.Expect(applied).To(HaveSuffix(head), "Flux applied the head")
	files, err := rig.files()
	g.Expect(err).NotTo(HaveOccurred())
	inGit := map[string][]string{}
	for file := range files {
		rel, ok := strings.CutPrefix(file, gitPath+"/"+f.ns+"/")
		if !ok {
			continue
		}
		kind, name, _ := strings.Cut(rel, "/")
		inGit[kind] = append(inGit[kind], strings.TrimSuffix(name, ".yaml"))
	}
	var wantCDs []string
	for _, c := range colony {
		wantCDs = append(wantCDs, f.cd(c))
	}
	g.Expect(inGit["clusterdeployment"]).To(ConsistOf(wantCDs), "ClusterDeployment files")
	for _, w := range f.workspaces {
		if w.deleted {
			g.Expect(inGit["serviceset"]).NotTo(ContainElement(serviceSetName(w)), "file of deleted workspace %s", w.name)
		} else {
			g.Expect(inGit["serviceset"]).To(ContainElement(serviceSetName(w)), "file of workspace %s", w.name)
		}
	}
	sets := &k0rdentv1beta1.ServiceSetList{}
	g.Expect(f.c.List(ctx, sets, client.InNamespace(f.ns))).To(Succeed())
	cds := &k0rdentv1beta1.ClusterDeploymentList{}
	g.Expect(f.c.List(ctx, cds, client.InNamespace(f.ns))).To(Succeed())
	g.Expect(names(sets.Items)).To(ConsistOf(inGit["serviceset"]), "ServiceSets applied by Flux")
	g.Expect(names(cds.Items)).To(ConsistOf(inGit["clusterdeployment"]), "ClusterDeployments applied by Flux")
	return len(inGit["serviceset"]) + len(inGit["clusterdeployment"])
}

// names returns the sorted names of objects.
func names[T any, P interface {
	*T
	client.Object
}](items []T) []string {
	out := make([]string, 0, len(items))
	for i := range items {
		out = append(out, P(&items[i]).GetName())
	}
	sort.Strings(out)
	return out
}
