package crash_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestDirectModeSurvivesKills rolls out a Colony and workspaces spread over
// its first clusters (GPU workspaces asking for more than the nodes hold,
// workspaces sharing a prerequisite), updates a third of them and some
// Colony clusters in place, deletes a third and some Colony clusters, while
// the manager, a separate process, is SIGKILLed at random points and
// started again. The invariants are watched all along; at the end what a
// user sees must be as if nothing had crashed.
func TestDirectModeSurvivesKills(t *testing.T) {
	g := NewWithT(t)
	began := time.Now()
	r := newRNG(1)
	f := newFleet(t, "d", cfg.colony, cfg.clusters)
	inv := watchInvariants(t, f.ns, f.capacity)
	m := newManager(t)
	m.Start()
	k := startKiller(m, r, cfg.kills)

	f.createColony()
	f.planWorkspaces(cfg.workspaces, r)
	for _, w := range f.workspaces {
		g.Expect(f.create(w)).To(Succeed())
	}

	// A third of the kills later: values of a third of the workspaces, and
	// the control planes of the clusters without workspaces, change.
	k.WaitKills(cfg.kills / 3)
	for _, i := range r.perm(len(f.workspaces))[:len(f.workspaces)/3] {
		w := f.workspaces[i]
		g.Expect(retryUpdate(func() error { return f.update(w) })).To(Succeed())
	}
	colony := f.colony
	grown := map[string]int{}
	for _, c := range colony[cfg.clusters:] {
		grown[c] = 2
	}
	g.Expect(retryUpdate(func() error { return f.setColony(colony, grown) })).To(Succeed())

	// Two thirds later: a third of the workspaces go, and half of the
	// clusters without workspaces leave the Colony.
	k.WaitKills(2 * cfg.kills / 3)
	for _, i := range r.perm(len(f.workspaces))[:len(f.workspaces)/3] {
		g.Expect(f.remove(f.workspaces[i])).To(Succeed())
	}
	colony = colony[:len(colony)-(len(colony)-cfg.clusters)/2]
	g.Expect(retryUpdate(func() error { return f.setColony(colony, grown) })).To(Succeed())
	k.Stop()

	checked := 0
	settle(t, 5*time.Minute, func(g Gomega) { checked = f.converged(g, inv, colony) })
	g.Expect(inv.Violations()).To(BeEmpty(), "invariants broken while the manager was killed")
	starts, kills, selfExits := m.Counts()
	g.Expect(selfExits).To(BeEmpty(), "the manager exited by itself")
	g.Expect(kills).To(BeNumerically(">=", cfg.kills))
	events, objects, peak := inv.Figures()
	t.Logf("direct mode: %d kills survived (%d starts), %d workspaces over %d clusters, Colony of %d→%d; "+
		"%d objects checked at the end, %d objects and %d events watched, duplicates found: %d, Failed phases: 0, over-admission: 0 (%s); %s",
		kills, starts, len(f.workspaces), len(f.clusters), len(f.colony), len(colony),
		checked, objects, events, len(inv.Violations()), peak, time.Since(began).Round(time.Second))
	f.cleanUp()
}
