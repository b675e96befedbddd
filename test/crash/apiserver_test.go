package crash_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// apiServerDown is how long the management API server stays stopped.
const apiServerDown = 8 * time.Second

// TestRecoversFromAPIServerRestart rolls out a Colony and workspaces, and
// stops the management API server (etcd kept) once a quarter of them run,
// for longer than the manager's requests wait, then starts it again and
// creates the rest. The manager, a separate process, must carry on without
// a restart of its own: one start, no exit, and no duplicate write: every
// object is the one first created (no UID seen twice), no workspace
// Failed, every ServiceSet and ClusterDeployment was written once
// (metadata.generation 1: nothing rendered changed) and every release was
// installed once.
func TestRecoversFromAPIServerRestart(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	began := time.Now()
	r := newRNG(3)
	f := newFleet(t, "a", 4, 4)
	inv := watchInvariants(t, f.ns, f.capacity)
	m := newManager(t)
	m.Start()

	f.createColony()
	f.planWorkspaces(cfg.apiWorkspaces, r)
	first := f.workspaces[:len(f.workspaces)/2]
	for _, w := range first {
		g.Expect(f.create(w)).To(Succeed())
	}
	settle(t, 3*time.Minute, func(g Gomega) {
		g.Expect(f.running(ctx)).To(BeNumerically(">=", len(f.workspaces)/4))
	})
	runningBefore := f.running(ctx)

	stopping := time.Now()
	killed, err := env.StopAPIServer()
	g.Expect(err).NotTo(HaveOccurred())
	stopped := time.Since(stopping).Round(time.Second)
	how := "stopped"
	if killed {
		how = "killed after a SIGTERM it did not stop on"
	}
	time.Sleep(apiServerDown)
	g.Expect(m.Running()).To(BeTrue(), "the manager kept running while the API server was down")
	g.Expect(env.StartAPIServer()).To(Succeed())
	for _, w := range f.workspaces[len(first):] {
		g.Eventually(func() error { return f.create(w) }).WithTimeout(time.Minute).Should(Succeed())
	}

	checked := 0
	settle(t, 4*time.Minute, func(g Gomega) {
		checked = f.converged(g, inv, f.colony)
		checked += f.writtenOnce(g, inv)
	})
	g.Expect(inv.Violations()).To(BeEmpty(), "invariants broken across the API server's restart")
	starts, kills, selfExits := m.Counts()
	g.Expect(selfExits).To(BeEmpty(), "the manager exited by itself")
	g.Expect(starts).To(Equal(1), "the manager was started once")
	g.Expect(kills).To(BeZero())
	events, objects, peak := inv.Figures()
	t.Logf("API server restart: %s in %s, down %s more with %d of %d workspaces running, the manager started once and never exited; "+
		"%d objects checked at the end, %d objects and %d events watched (%d watches listed again after the restart), duplicates found: %d, objects written twice: 0, "+
		"Failed phases: 0, over-admission: 0 (%s); %s",
		how, stopped, apiServerDown, runningBefore, len(f.workspaces), checked, objects, events, relists.Load(), len(inv.Violations()), peak,
		time.Since(began).Round(time.Second))
	f.cleanUp()
}

// running counts the fleet's Running workspaces.
func (f *fleet) running(ctx context.Context) int {
	list := &workspacesv1.WorkspaceDeploymentList{}
	if err := f.c.List(ctx, list, client.InNamespace(f.ns)); err != nil {
		return 0
	}
	n := 0
	for _, w := range list.Items {
		if w.Status.Phase == workspacesv1.PhaseRunning {
			n++
		}
	}
	return n
}

// writtenOnce checks that no ServiceSet or ClusterDeployment of the
// namespace had its spec changed after it was created (nothing it renders
// changed), by the specs inv saw, and returns how many it checked.
func (f *fleet) writtenOnce(g Gomega, inv *invariants) int {
	ctx := context.Background()
	sets := &k0rdentv1beta1.ServiceSetList{}
	g.Expect(f.c.List(ctx, sets, client.InNamespace(f.ns))).To(Succeed())
	for _, s := range sets.Items {
		g.Expect(inv.Specs("ServiceSet", s.Name)).To(HaveLen(1), "specs of ServiceSet %s (generation %d)", s.Name, s.Generation)
	}
	cds := &k0rdentv1beta1.ClusterDeploymentList{}
	g.Expect(f.c.List(ctx, cds, client.InNamespace(f.ns))).To(Succeed())
	for _, cd := range cds.Items {
		g.Expect(inv.Specs("ClusterDeployment", cd.Name)).To(HaveLen(1), "specs of ClusterDeployment %s (generation %d)", cd.Name, cd.Generation)
	}
	return len(sets.Items) + len(cds.Items)
}
