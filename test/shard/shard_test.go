package shard_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/shard"
	"github.com/apiaryhq/apiary/internal/usage"
	"github.com/apiaryhq/apiary/test/world"
)

// perShard picks clusters so that each of count shards gets at least n.
func perShard(count, n int) func(string, []string) bool {
	return func(key string, taken []string) bool {
		have := 0
		for _, k := range taken {
			if shard.Desired(k, count) == shard.Desired(key, count) {
				have++
			}
		}
		return have < n
	}
}

// TestTwoShardsSplitTheClusters: two shards share a Colony and four
// ClusterDeployments; every workspace runs, each unit is held by and acted
// on only by its desired shard, and each replica starts child caches only
// of its own clusters.
func TestTwoShardsSplitTheClusters(t *testing.T) {
	g := NewWithT(t)
	rec := newRecorder()
	t.Cleanup(func() { noOverlap(t, rec) }) // after the replicas stopped, whatever failed
	start := time.Now()
	replicas := []*replica{startReplica(t, rec, "s0", 0, 2), startReplica(t, rec, "s1", 1, 2)}
	f := newFleet(t, 4, perShard(2, 2))
	var ws []*workspacesv1.WorkspaceDeployment
	for i, cd := range f.clusters() {
		ws = append(ws, f.workspace(t, fmt.Sprintf("w-%d", i), cd))
	}
	ws = append(ws, f.workspace(t, "w-extra", f.clusters()[0]))
	running(t, ws...)
	f.expectHeldAsDesired(t, 2)
	// Stopped and started again, each workspace gives back its GPU and gets
	// one again through the shard that holds its cluster.
	setStopped(t, true, ws[:4]...)
	phase(t, workspacesv1.PhaseStopped, ws[:4]...)
	setStopped(t, false, ws[:4]...)
	running(t, ws...)

	actors := rec.actors(start)
	for _, u := range f.units {
		g.Expect(actors[u.Kind+" "+u.Key()]).To(Equal(map[int]bool{shard.Desired(u.Key(), 2): true}), "who acted on %s", u)
	}
	for _, r := range replicas {
		own := 0
		for cluster := range r.Caches() {
			if !strings.HasPrefix(cluster, f.ns+"/") {
				continue
			}
			u, ok := f.units[cluster]
			g.Expect(ok).To(BeTrue(), "replica %s started a cache of %s", r.name, cluster)
			g.Expect(shard.Desired(u.Key(), 2)).To(Equal(r.index), "replica %s started a cache of %s, another shard's", r.name, cluster)
			own++
		}
		g.Expect(own).To(BeNumerically(">", 0), "replica %s started no child cache", r.name)
	}
}

// TestKilledShardIsTakenOver: shard 1 runs an active and a standby
// replica; the active one is killed (its Lease stays until it lapses), and
// the standby takes its units over once the Lease lapsed, never while the
// killed one could still act.
func TestKilledShardIsTakenOver(t *testing.T) { killedShardIsTakenOver(t, nil) }

// TestKilledShardIsTakenOverInGit is TestKilledShardIsTakenOver with the
// replicas committing to one Git branch for Flux: the unit that changes
// process keeps every file and object (expectGitIntact).
func TestKilledShardIsTakenOverInGit(t *testing.T) { killedShardIsTakenOver(t, gitFlags) }

// mode gives the flags of a replica beyond its shard's: nil for direct
// delivery, gitFlags for Git.
type mode func(name string) []string

func (m mode) flags(name string) []string {
	if m == nil {
		return nil
	}
	return m(name)
}

func killedShardIsTakenOver(t *testing.T, m mode) {
	rec := newRecorder()
	t.Cleanup(func() { noOverlap(t, rec) }) // after the replicas stopped, whatever failed
	startReplica(t, rec, "s0", 0, 2, m.flags("s0")...)
	s1a := startReplica(t, rec, "s1a", 1, 2, m.flags("s1a")...)
	// The standby starts once s1a holds the Lease, before any workspace
	// (whose deletion at the end needs a replica of shard 1).
	NewWithT(t).Eventually(func(g Gomega) {
		l := &coordinationv1.Lease{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: leaseNamespace, Name: shard.LeaseName(1)}, l)).To(Succeed())
		g.Expect(shard.LeaseLeft(l, time.Now())).To(BeNumerically(">", 0))
	}, timeout, 200*time.Millisecond).Should(Succeed())
	s1b := startReplica(t, rec, "s1b", 1, 2, m.flags("s1b")...)
	f := newFleet(t, 2, perShard(2, 1))
	var shard1 string
	for key, u := range f.units {
		if shard.Desired(u.Key(), 2) == 1 {
			shard1 = key[len(f.ns)+1:]
		}
	}
	if shard1 == "" {
		t.Fatal("no cluster of shard 1")
	}
	w1 := f.workspace(t, "before", shard1)
	running(t, w1)
	var sets map[string]types.UID
	if m != nil {
		sets = serviceSets(t, w1)
	}
	g := NewWithT(t)
	admitted := &workspacesv1.WorkspaceDeployment{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(w1), admitted)).To(Succeed())
	killed := time.Now()
	s1a.Kill()
	w2 := f.workspace(t, "after", shard1)
	running(t, w2)
	if m == nil {
		// Admitted by s1a, stopped by s1b: its usage is its one run, from
		// the admission s1a recorded to the stop s1b made.
		asked := time.Now()
		setStopped(t, true, w1)
		phase(t, workspacesv1.PhaseStopped, w1)
		stopped := &workspacesv1.WorkspaceDeployment{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(w1), stopped)).To(Succeed())
		g.Expect(stopped.Status.Usage).NotTo(BeNil())
		from := admitted.Status.Admission.AdmittedAt.Unix()
		g.Expect(usage.GPUSecondsOf(*stopped.Status.Usage, "nvidia.com/gpu")).To(SatisfyAll(
			BeNumerically(">=", asked.Unix()-from), BeNumerically("<=", time.Now().Unix()+1-from)),
			"one GPU from s1a's admission to s1b's stop, once")
	}
	for _, u := range f.units {
		if shard.Desired(u.Key(), 2) != 1 {
			continue
		}
		for _, s := range rec.snapshot() {
			if s.unit == u.Kind+" "+u.Key() && s.end.After(killed) {
				g.Expect(s.replica).To(Equal(s1b.name), "%s acted on %s after s1a was killed", s.replica, u)
			}
		}
	}
	f.expectHeldAsDesired(t, 2)
	if m != nil {
		expectGitIntact(t, f.ns, sets, w1, w2)
	}
}

// TestTwoToThreeShards: two shards run; a third starts with the new
// configuration, and the first two are replaced in a rolling restart. A
// workspace of a unit that moves to shard 2 says it waits for the hand-over
// until its old shard restarted; then every unit is held by its shard of
// three, every workspace runs, and no unit was ever acted on by two
// processes at once.
func TestTwoToThreeShards(t *testing.T) { twoToThreeShards(t, nil) }

// TestTwoToThreeShardsInGit is TestTwoToThreeShards with the replicas
// committing to one Git branch for Flux: the units that move to the new
// shard keep every file and object (expectGitIntact).
func TestTwoToThreeShardsInGit(t *testing.T) { twoToThreeShards(t, gitFlags) }

func twoToThreeShards(t *testing.T, m mode) {
	g := NewWithT(t)
	rec := newRecorder()
	t.Cleanup(func() { noOverlap(t, rec) }) // after the replicas stopped, whatever failed
	old0, old1 := startReplica(t, rec, "old0", 0, 2, m.flags("old0")...), startReplica(t, rec, "old1", 1, 2, m.flags("old1")...)
	// Two clusters that move to shard 2, and one that stays on each of
	// shards 0 and 1.
	moves := func(key string, taken []string) bool {
		moving, same := 0, 0
		for _, k := range taken {
			switch {
			case shard.Desired(k, 3) == 2:
				moving++
			case shard.Desired(k, 2) == shard.Desired(key, 2):
				same++
			}
		}
		if shard.Desired(key, 3) == 2 {
			return moving < 2
		}
		return same < 1
	}
	f := newFleet(t, 4, moves)
	var ws []*workspacesv1.WorkspaceDeployment
	var moving string
	var movingWS *workspacesv1.WorkspaceDeployment // a workspace of a unit that moves
	for i, cd := range f.clusters() {
		ws = append(ws, f.workspace(t, fmt.Sprintf("w-%d", i), cd))
		if shard.Desired(f.units[f.ns+"/"+cd].Key(), 3) == 2 {
			moving, movingWS = cd, ws[len(ws)-1]
		}
	}
	running(t, ws...)
	f.expectHeldAsDesired(t, 2)
	var sets map[string]types.UID
	if m != nil {
		sets = serviceSets(t, ws...)
	}

	// The new configuration: shard 2, and replicas of shards 0 and 1 that
	// wait for their Leases.
	startReplica(t, rec, "new2", 2, 3, m.flags("new2")...)
	startReplica(t, rec, "new0", 0, 3, m.flags("new0")...)
	startReplica(t, rec, "new1", 1, 3, m.flags("new1")...)
	// The workspaces go while the new replicas run, whatever fails.
	t.Cleanup(func() {
		for _, w := range ws {
			world.DeleteAndWait(t, env.Client, w)
		}
	})
	waiting := f.workspace(t, "moving", moving)
	ws = append(ws, waiting)
	g.Eventually(func(g Gomega) {
		got := &workspacesv1.WorkspaceDeployment{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(waiting), got)).To(Succeed())
		c := condition(got, workspacesv1.ShardAssignedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(workspacesv1.ShardHandOverReason), c.Message)
	}, timeout, 200*time.Millisecond).Should(Succeed())

	if m != nil {
		// Git mode: the old holder stops a workspace of a moving unit after
		// shard 2 read the branch; once shard 2 holds the unit, the
		// workspace starts again. Shard 2 must commit the start, although
		// what it renders is what its first view of the branch held: it
		// reloads the branch when it takes the unit up.
		setStopped(t, true, movingWS)
		phase(t, workspacesv1.PhaseStopped, movingWS)
	}
	old0.Stop()
	old1.Stop()
	if m != nil {
		f.expectHeldAsDesired(t, 3)
		setStopped(t, false, movingWS)
	}
	running(t, ws...)
	f.expectHeldAsDesired(t, 3)
	g.Eventually(func(g Gomega) {
		got := &workspacesv1.WorkspaceDeployment{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(waiting), got)).To(Succeed())
		g.Expect(condition(got, workspacesv1.ShardAssignedCondition)).To(BeNil(), "the wait is over")
	}, timeout, 200*time.Millisecond).Should(Succeed())
	if m != nil {
		expectGitIntact(t, f.ns, sets, ws...)
	}
	// Deleting them is the new shards' work.
	for _, w := range ws {
		world.DeleteAndWait(t, env.Client, w)
	}
}

// TestTenantQuotaAcrossShards: one tenant's workspaces on clusters of both
// shards, all created at once, against a quota of three workspaces: three
// are admitted, the others wait for the quota, and the quota never counts
// more than three.
func TestTenantQuotaAcrossShards(t *testing.T) {
	g := NewWithT(t)
	rec := newRecorder()
	t.Cleanup(func() { noOverlap(t, rec) }) // after the replicas stopped, whatever failed
	startReplica(t, rec, "s0", 0, 2)
	startReplica(t, rec, "s1", 1, 2)
	f := newFleet(t, 2, perShard(2, 1))
	ns := &corev1.Namespace{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Name: f.ns}, ns)).To(Succeed())
	ns.Labels = map[string]string{"tenant": f.ns}
	g.Expect(env.Client.Update(context.Background(), ns)).To(Succeed())
	q := &quotav1alpha1.TenantQuota{ObjectMeta: metav1.ObjectMeta{Name: f.ns}, Spec: quotav1alpha1.TenantQuotaSpec{
		NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tenant": f.ns}},
		Hard:              quotav1alpha1.QuotaLimits{Workspaces: ptr.To[int64](3)},
	}}
	g.Expect(env.Client.Create(context.Background(), q)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), q) })

	// Watch the quota and the admissions while the workspaces arrive.
	stop := make(chan struct{})
	var mu sync.Mutex
	var worst int64
	var admittedMost int
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			got := &quotav1alpha1.TenantQuota{}
			if env.Client.Get(context.Background(), client.ObjectKeyFromObject(q), got) == nil {
				mu.Lock()
				worst = max(worst, got.Status.Used.Workspaces)
				mu.Unlock()
			}
			list := &workspacesv1.WorkspaceDeploymentList{}
			if env.Client.List(context.Background(), list, client.InNamespace(f.ns)) == nil {
				n := 0
				for _, w := range list.Items {
					if w.Status.Admission != nil {
						n++
					}
				}
				mu.Lock()
				admittedMost = max(admittedMost, n)
				mu.Unlock()
			}
		}
	}()
	var ws []*workspacesv1.WorkspaceDeployment
	clusters := f.clusters()
	for i := range 8 {
		ws = append(ws, f.workspace(t, fmt.Sprintf("q-%d", i), clusters[i%len(clusters)]))
	}
	g.Eventually(func(g Gomega) {
		running, waiting := 0, 0
		for _, w := range ws {
			got := &workspacesv1.WorkspaceDeployment{}
			g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(w), got)).To(Succeed())
			switch got.Status.Phase {
			case workspacesv1.PhaseRunning:
				running++
			case workspacesv1.PhaseWaiting:
				c := condition(got, workspacesv1.QuotaReservedCondition)
				g.Expect(c).NotTo(BeNil())
				waiting++
			}
		}
		g.Expect(running).To(Equal(3))
		g.Expect(waiting).To(Equal(5))
	}, timeout, 200*time.Millisecond).Should(Succeed())
	close(stop)
	<-done
	mu.Lock()
	defer mu.Unlock()
	g.Expect(worst).To(BeNumerically("<=", 3), "the quota counted more than its limit")
	g.Expect(admittedMost).To(BeNumerically("<=", 3), "more workspaces were admitted than the quota allows")
}

func condition(w *workspacesv1.WorkspaceDeployment, typ string) *metav1.Condition {
	for i := range w.Status.Conditions {
		if w.Status.Conditions[i].Type == typ {
			return &w.Status.Conditions[i]
		}
	}
	return nil
}

// setStopped asks for workspaces to be stopped, or started again.
func setStopped(t *testing.T, stopped bool, ws ...*workspacesv1.WorkspaceDeployment) {
	t.Helper()
	for _, w := range ws {
		NewWithT(t).Eventually(func() error {
			got := &workspacesv1.WorkspaceDeployment{}
			if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(w), got); err != nil {
				return err
			}
			got.Spec.Lifecycle = &workspacesv1.WorkspaceLifecycle{Stopped: stopped}
			return env.Client.Update(context.Background(), got)
		}, timeout, 100*time.Millisecond).Should(Succeed())
	}
}

// phase waits for workspaces to reach a phase with their admission given
// back (Stopped) or held (any other phase).
func phase(t *testing.T, want workspacesv1.WorkspacePhase, ws ...*workspacesv1.WorkspaceDeployment) {
	t.Helper()
	for _, w := range ws {
		NewWithT(t).Eventually(func(g Gomega) {
			got := &workspacesv1.WorkspaceDeployment{}
			g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(w), got)).To(Succeed())
			g.Expect(got.Status.Phase).To(Equal(want), "%s: %s", w.Name, got.Status.Message)
			g.Expect(got.Status.Admission == nil).To(Equal(want == workspacesv1.PhaseStopped))
		}, timeout, 200*time.Millisecond).Should(Succeed())
	}
}
