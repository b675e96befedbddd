package quota

import (
	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	"github.com/apiaryhq/apiary/internal/fewest"
)

// Preemption for room in a quota. A stopped workspace holds only its place
// in the workspaces count (Held), so stopping workspaces the quota counts
// gives back their GPUs, CPU and memory, never a place in the count.

// QuotaPreemption is what a charge refused by a quota may do.
type QuotaPreemption struct {
	// Victims are indices into the candidates, in their order; empty when
	// stopping them would not make the charge fit, or it fits already.
	Victims []int
	// Freeing is set when the charge fits once the leaving workspaces'
	// stops are done: it waits for them and preempts no one.
	Freeing bool
}

// PreemptFor finds the fewest candidates (already in the order of
// preference: the lowest priority, then the youngest) whose stop makes c
// fit q, and among sets as small the first in that order. counted is what
// the quota counts now of the workspace of c (its prior charge, if any);
// leaving are the counted charges of workspaces already stopping, which
// count as given back; candidates are the counted charges of the
// workspaces the caller allows as victims: the quota's own workspaces, and
// loans to the cohort's (a reclaim: a borrower's stop ends its loan).
func PreemptFor(q *quotav1alpha1.TenantQuota, counted *quotav1alpha1.QuotaCharge, leaving, candidates []quotav1alpha1.QuotaCharge,
	c quotav1alpha1.QuotaCharge) QuotaPreemption {
	if Recounting(q) {
		return QuotaPreemption{} // a charge that grows waits for the recount, whatever stops
	}
	base := append(append(append([]quotav1alpha1.QuotaCharge(nil), priors(counted)...), leaving...), candidates...)
	fits := func(stopped []int) bool {
		t := newTally(q, base...)
		for _, l := range leaving {
			t.stop(l)
		}
		for _, i := range stopped {
			t.stop(candidates[i])
		}
		return len(exceeding(t.growth(c))) == 0
	}
	freeing := func() bool { return len(leaving) > 0 && fits(nil) }
	all := make([]int, len(candidates))
	for i := range all {
		all[i] = i
	}
	if len(candidates) == 0 || !fits(all) {
		return QuotaPreemption{Freeing: freeing()}
	}
	if fits(nil) {
		return QuotaPreemption{Freeing: len(leaving) > 0}
	}
	return QuotaPreemption{Victims: fewest.Choose(len(candidates), func(idx []int) bool { return fits(idx) })}
}

// stop puts in place of a workspace's charge what it holds once stopped:
// its place in the workspaces count (Held), or nothing for a loan, which
// the borrower's stop ends.
func (t *tally) stop(c quotav1alpha1.QuotaCharge) {
	if !IsLoan(c) {
		t.put(Held(c))
		return
	}
	if old, ok := t.charges[c.UID]; ok {
		t.used.put(amountsOf(t.hard, &old), -1)
		delete(t.charges, c.UID)
	}
}
