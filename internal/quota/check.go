package quota

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	"github.com/apiaryhq/apiary/internal/resources"
)

// Excess is one limit a charge does not fit.
type Excess struct {
	// Limit names the limit: workspaces, cpu, memory or gpus "<name>".
	Limit string
	// Requested, Used and Hard are the charge's amount, what others use, and the limit.
	Requested, Used, Hard string
	// Recounting: the GPU limits changed and their usage is being
	// recounted; nothing that grows is admitted meanwhile.
	Recounting bool
	// Note, when set, is the whole reason.
	Note string
}

func (e Excess) String() string {
	if e.Recounting {
		return "the GPU limits changed; their usage is being recounted"
	}
	if e.Note != "" {
		return e.Note
	}
	return fmt.Sprintf("%s: %s requested, %s of %s used", e.Limit, e.Requested, e.Used, e.Hard)
}

// Recounting reports whether a quota's used does not count its spec's GPU
// limits yet (they changed, or it was never counted): only the quota's
// controller, recounting, makes them agree.
func Recounting(q *quotav1alpha1.TenantQuota) bool {
	return q.Status.Totals && !SameGPULimits(q.Spec.Hard.GPUs, q.Status.Hard.GPUs)
}

// SameGPULimits reports whether two lists of GPU limits count the same
// GPUs under the same names, whatever their counts.
func SameGPULimits(a, b []quotav1alpha1.GPULimit) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || limitResource(a[i]) != limitResource(b[i]) || a[i].GPUModel != b[i].GPUModel ||
			!sameLabels(a[i].NodeSelector, b[i].NodeSelector) {
			return false
		}
	}
	return true
}

// Check returns the limits of a quota that a charge does not fit beside
// what the quota counts of every other workspace (its totals). prior is
// what it counts of this workspace now (Counted), which the charge
// replaces; only what grows is checked, as Kubernetes charges an update by
// its delta: a charge that asks no more of a limit than before fits it
// even when the others use more than it allows (after the quota was
// lowered), so a workspace that shrinks never waits. While the quota's GPU
// limits are recounted, a charge that grows waits.
func Check(q *quotav1alpha1.TenantQuota, prior *quotav1alpha1.QuotaCharge, c quotav1alpha1.QuotaCharge) []Excess {
	t := newTally(q, priors(prior)...)
	g := t.growth(c)
	if Recounting(q) && len(g) > 0 {
		return []Excess{{Limit: "gpus", Recounting: true}}
	}
	var out []Excess
	for _, l := range exceeding(g) {
		out = append(out, l.Excess)
	}
	return out
}

func priors(c *quotav1alpha1.QuotaCharge) []quotav1alpha1.QuotaCharge {
	if c == nil {
		return nil
	}
	return []quotav1alpha1.QuotaCharge{*c}
}

// Ahead returns which older waiting charges, first come first served, a
// charge waits behind in a quota. counted are what the quota counts of
// the workspaces of older and c now (their records), which their charges
// replace. Each older charge that fits is given its
// room first; one that does not fit holds back a younger charge that asks
// more of a limit it exceeds; and a charge that no longer fits once the
// older ones that fit are in waits behind those that need a limit it needs.
func Ahead(q *quotav1alpha1.TenantQuota, counted []quotav1alpha1.QuotaCharge, older []quotav1alpha1.QuotaCharge, c quotav1alpha1.QuotaCharge) []int {
	planned := newTally(q, counted...)
	needs := map[string]bool{}
	for _, l := range planned.growth(c) {
		needs[l.Limit] = true
	}
	shares := func(limits []limitGrowth) bool {
		for _, l := range limits {
			if needs[l.Limit] {
				return true
			}
		}
		return false
	}
	var ahead, placed []int
	for i, o := range older {
		g := planned.growth(o)
		if exceeded := exceeding(g); len(exceeded) > 0 {
			if shares(exceeded) {
				ahead = append(ahead, i)
			}
			continue
		}
		planned.put(o)
		if shares(g) {
			placed = append(placed, i)
		}
	}
	if len(exceeding(planned.growth(c))) > 0 {
		ahead = append(ahead, placed...)
	}
	sort.Ints(ahead)
	return ahead
}

func exceeding(g []limitGrowth) []limitGrowth {
	var out []limitGrowth
	for _, l := range g {
		if l.exceeds {
			out = append(out, l)
		}
	}
	return out
}

// limitGrowth is a limit that a charge asks more of than the workspace's
// earlier charge, and whether it then ends above hard.
type limitGrowth struct {
	Excess
	exceeds bool
}

// tally is a quota's usage as charges are put in. Its totals are exact,
// so taking a charge out never under-counts.
type tally struct {
	hard    quotav1alpha1.QuotaLimits
	cohort  string
	used    totals
	charges map[types.UID]quotav1alpha1.QuotaCharge
	labels  []string // of the GPU limits
}

// newTally starts from a quota's totals, checked against its spec's
// limits; counted are what the totals hold of the workspaces whose
// charges will be put in. A quota an earlier Apiary wrote is read as
// EnsureTotals converts it.
func newTally(q *quotav1alpha1.TenantQuota, counted ...quotav1alpha1.QuotaCharge) *tally {
	q = withTotals(q)
	t := &tally{hard: q.Spec.Hard, cohort: q.Spec.Cohort, used: usedTotals(q), charges: make(map[types.UID]quotav1alpha1.QuotaCharge, len(counted))}
	if !SameGPULimits(q.Spec.Hard.GPUs, q.Status.Hard.GPUs) {
		t.hard.GPUs = q.Status.Hard.GPUs // recounting: the counted limits
	}
	for _, c := range counted {
		t.charges[c.UID] = c
	}
	for _, l := range q.Spec.Hard.GPUs {
		t.labels = append(t.labels, fmt.Sprintf("gpus %q", l.Name))
	}
	return t
}

// put puts a workspace's charge in, in place of its earlier one.
func (t *tally) put(c quotav1alpha1.QuotaCharge) {
	if old, ok := t.charges[c.UID]; ok {
		t.used.put(amountsOf(t.hard, &old), -1)
	}
	t.used.put(amountsOf(t.hard, &c), 1)
	t.charges[c.UID] = c
}

// growth lists the limits a charge asks more of than the workspace's
// charge in the tally, and whether each then ends above hard. A total
// that saturates ends above every limit.
func (t *tally) growth(c quotav1alpha1.QuotaCharge) []limitGrowth {
	hard := t.hard
	used := t.used.clone()
	old, had := t.charges[c.UID]
	before := amountsOf(hard, nil)
	if had {
		before = amountsOf(hard, &old)
		used.put(before, -1)
	}
	mine := amountsOf(hard, &c)
	var out []limitGrowth
	if hard.Workspaces != nil && !had {
		out = append(out, limitGrowth{Excess{Limit: "workspaces", Requested: "1", Used: fmt.Sprint(used.workspaces),
			Hard: fmt.Sprint(*hard.Workspaces)}, used.workspaces+1 > *hard.Workspaces})
	}
	for i, l := range hard.GPUs {
		// What the charge takes of the nominal count: its GPUs but those it
		// borrows, or those it lends.
		if req := mine.gpus[i] - mine.borrowed[i]; req > before.gpus[i]-before.borrowed[i] {
			total := used.nominal(i)
			total.Add(req)
			out = append(out, limitGrowth{Excess{Limit: t.labels[i], Requested: fmt.Sprint(req),
				Used: fmt.Sprint(used.nominal(i).Int64()), Hard: fmt.Sprint(l.Count)}, total.Exceeds(l.Count)})
		}
		for _, part := range []struct {
			what         string
			mine, before int64
			used         resources.Sum
			limit        *int64
		}{
			{"borrowingLimit", mine.borrowed[i], before.borrowed[i], used.borrowed[i], borrowingLimit(t.cohort, l, used.lent[i])},
			{"lendingLimit", mine.lent[i], before.lent[i], used.lent[i], lendingLimit(l, used.borrowed[i])},
		} {
			if part.mine <= part.before || part.limit == nil {
				continue
			}
			total := part.used
			total.Add(part.mine)
			out = append(out, limitGrowth{Excess{Limit: t.labels[i] + " " + part.what, Requested: fmt.Sprint(part.mine),
				Used: fmt.Sprint(part.used.Int64()), Hard: fmt.Sprint(*part.limit)}, total.Exceeds(*part.limit)})
		}
	}
	for _, r := range []struct {
		name         string
		hard         *resource.Quantity
		unit         resources.Unit
		used         resources.Sum
		mine, before int64
		format       resource.Format
		charged      *resource.Quantity
	}{
		{"cpu", hard.CPU, resources.Milli, used.cpu, mine.cpu, before.cpu, used.cpuFormat, c.CPU},
		{"memory", hard.Memory, resources.Whole, used.memory, mine.memory, before.memory, used.memoryFormat, c.Memory},
	} {
		if r.hard == nil || r.mine <= r.before {
			continue
		}
		total := r.used
		total.Add(r.mine)
		out = append(out, limitGrowth{Excess{Limit: r.name, Requested: r.unit.Quantity(r.mine, r.charged.Format).String(),
			Used: r.unit.Quantity(r.used.Int64(), r.format).String(), Hard: r.hard.String()}, r.unit.Exceeds(total, *r.hard)})
	}
	return out
}

// borrowingLimit is how many GPUs of a limit the quota's workspaces may
// borrow: none outside a cohort or while it lends some of them (it
// reclaims them instead), unlimited when unset.
func borrowingLimit(cohort string, l quotav1alpha1.GPULimit, lent resources.Sum) *int64 {
	if cohort == "" || lent.Int64() > 0 {
		zero := int64(0)
		return &zero
	}
	return l.BorrowingLimit
}

// lendingLimit is how many GPUs of a limit the quota lends at most: none
// while its workspaces borrow some (they would borrow back what it
// lends), all of them when unset.
func lendingLimit(l quotav1alpha1.GPULimit, borrowed resources.Sum) *int64 {
	if borrowed.Int64() > 0 {
		zero := int64(0)
		return &zero
	}
	return l.LendingLimit
}

// withTotals is q, or a copy of a quota an earlier Apiary wrote converted
// as EnsureTotals converts it: what a reader of totals reads.
func withTotals(q *quotav1alpha1.TenantQuota) *quotav1alpha1.TenantQuota {
	if q.Status.Totals {
		return q
	}
	q = q.DeepCopy()
	EnsureTotals(q)
	return q
}
