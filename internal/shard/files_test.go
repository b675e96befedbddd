package shard

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	"github.com/apiaryhq/apiary/internal/delivery"
)

func TestRefRoundTrips(t *testing.T) {
	g := NewWithT(t)
	for _, u := range []Unit{
		{Kind: KindColony, NamespacedName: types.NamespacedName{Namespace: "team", Name: "fleet"}},
		{Kind: KindClusterDeployment, NamespacedName: types.NamespacedName{Namespace: "team", Name: "cd-1"}},
	} {
		got, ok := ParseRef(u.Ref())
		g.Expect(ok).To(BeTrue())
		g.Expect(got).To(Equal(u))
	}
	g.Expect(Unit{}.Ref()).To(BeEmpty())
	for _, bad := range []string{"", "Colony", "Colony/team", "Colony/team/", "Colony//x", "Workspace/team/x", "Colony/a/b/c"} {
		_, ok := ParseRef(bad)
		g.Expect(ok).To(BeFalse(), bad)
	}
}

// TestMayRemoveNeverTouchesAnotherShardsUnit is a property test of the
// sweep restriction: over random configurations, units, file annotations
// and sets of held units, a shard may remove a file only when the file
// names a unit it holds; without sharding, always.
func TestMayRemoveNeverTouchesAnotherShardsUnit(t *testing.T) {
	g := NewWithT(t)
	r := rand.New(rand.NewPCG(33, 1))
	kinds := []string{KindColony, KindClusterDeployment, "WorkspaceDeployment", ""}
	names := []string{"a", "b", "c", "d", ""}
	for range 20000 {
		shards := r.IntN(5)
		c := Config{Index: r.IntN(max(shards, 1)), Shards: shards}
		var universe []Unit
		for _, k := range kinds[:2] {
			for _, n := range names[:4] {
				universe = append(universe, Unit{Kind: k, NamespacedName: types.NamespacedName{Namespace: "ns", Name: n}})
			}
		}
		held := map[Unit]bool{}
		for _, u := range universe {
			held[u] = r.IntN(2) == 0
		}
		// The file's annotation: a unit's Ref, or garbage, or none.
		ref := ""
		switch r.IntN(3) {
		case 0:
			ref = universe[r.IntN(len(universe))].Ref()
		case 1:
			ref = kinds[r.IntN(len(kinds))] + "/ns/" + names[r.IntN(len(names))]
		}
		got := MayRemove(c, ref, func(u Unit) bool { return held[u] })
		if !c.Enabled() {
			g.Expect(got).To(BeTrue(), "without sharding every sweep is allowed")
			continue
		}
		u, ok := ParseRef(ref)
		g.Expect(got).To(Equal(ok && held[u]), "config %+v, file unit %q, held %v", c, ref, held)
		if got {
			g.Expect(held[u]).To(BeTrue(), "removed a file of a unit this shard does not hold")
		}
	}
	g.Expect(MayRemove(Config{Index: 0, Shards: 2}, "Colony/ns/a", nil)).To(BeFalse(), "no holder function: nothing is held")
}

// TestGateHoldsOnlyWhatItActsOn: Holds is true for a unit this process
// claimed, and false for another shard's unit and once the unit drains.
func TestGateHoldsOnlyWhatItActsOn(t *testing.T) {
	g := NewWithT(t)
	mine, theirs := cdOfShard(0, 2), cdOfShard(1, 2)
	gate, _ := newGate(0, cd(mine, ""), cd(theirs, "1"))
	g.Expect(gate.Holds(mine)).To(BeFalse(), "not claimed yet")
	tk, err := gate.Enter(context.Background(), mine)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tk.Acting()).To(BeTrue())
	tk.Done()
	g.Expect(gate.Holds(mine)).To(BeTrue())
	g.Expect(gate.Holds(theirs)).To(BeFalse())
	g.Expect(gate.drained(mine)).To(BeTrue())
	g.Expect(gate.Holds(mine)).To(BeFalse(), "a draining unit is being handed over")
	var off *Gate
	g.Expect(off.Holds(theirs)).To(BeTrue(), "without sharding everything is this process's")
}

// TestGateSettlesBeforeReleaseAndTakesUpBeforeActing: a drained unit is
// released only once Settled says its changes are pushed, and OnAcquire
// runs once before the first act of a holding, again after a failure, and
// not again while the unit stays held.
func TestGateSettlesBeforeReleaseAndTakesUpBeforeActing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	theirs := cdOfShard(1, 2) // held by shard 0 from an earlier configuration
	mine := cdOfShard(0, 2)
	gate, c := newGate(0, cd(theirs, "0"), cd(mine, ""))
	settled := false
	gate.Settled = func(_ context.Context, u Unit) bool { return settled }
	tk, err := gate.Enter(ctx, theirs)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tk.Action).To(Equal(Release))
	g.Expect(holderOf(g, c, theirs)).To(Equal("0"), "not released while a change of the unit is unpushed")
	settled = true
	_, err = gate.Enter(ctx, theirs)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(holderOf(g, c, theirs)).To(BeEmpty(), "released once settled")

	var calls []time.Time
	fail := true
	gate.OnAcquire = func(_ context.Context, u Unit, since time.Time) error {
		g.Expect(u).To(Equal(mine))
		calls = append(calls, since)
		if fail {
			return errors.New("the branch cannot be fetched")
		}
		return nil
	}
	before := time.Now()
	tk, err = gate.Enter(ctx, mine)
	g.Expect(err).To(MatchError(ContainSubstring("cannot be fetched")))
	g.Expect(tk.Acting()).To(BeFalse(), "no act on a view of the branch that may be stale")
	g.Expect(tk.RequeueAfter).To(Equal(Retry))
	g.Expect(holderOf(g, c, mine)).To(Equal("0"), "the claim stays")
	g.Expect(calls).To(HaveLen(1))
	g.Expect(calls[0]).NotTo(BeTemporally("<", before))
	fail = false
	tk, err = gate.Enter(ctx, mine)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tk.Action).To(Equal(Act))
	g.Expect(tk.Acting()).To(BeTrue())
	tk.Done()
	tk, err = gate.Enter(ctx, mine)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tk.Acting()).To(BeTrue())
	tk.Done()
	g.Expect(calls).To(HaveLen(2), "taken up once per holding")
	g.Expect(delivery.UnitOf(tk.WithUnit(ctx))).To(Equal(mine.Ref()), "the sinks learn the unit")
	off, _ := gate.Enter(ctx, mine)
	off.Done()
	var none *Gate
	offTk, _ := none.Enter(ctx, mine)
	g.Expect(delivery.UnitOf(offTk.WithUnit(ctx))).To(BeEmpty(), "no unit without sharding")
}
