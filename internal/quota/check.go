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
}

func (e Excess) String() string {
	return fmt.Sprintf("%s: %s requested, %s of %s used", e.Limit, e.Requested, e.Used, e.Hard)
}

// Check returns the limits of a quota that a charge does not fit beside
// every other charge of its ledger. An earlier charge of the same workspace
// is replaced, and only what grows is checked, as Kubernetes charges an
// update by its delta: a charge that asks no more of a limit than before
// fits it even when the others use more than it allows (after the quota was
// lowered), so a workspace that shrinks never waits.
func Check(q *quotav1alpha1.TenantQuota, c quotav1alpha1.QuotaCharge) []Excess {
	var out []Excess
	for _, l := range exceeding(growth(q, c)) {
		out = append(out, l.Excess)
	}
	return out
}

// Ahead returns which older waiting charges, first come first served, a
// charge waits behind in a quota. Each older charge that fits is given its
// room first; one that does not fit holds back a younger charge that asks
// more of a limit it exceeds; and a charge that no longer fits once the
// older ones that fit are in waits behind those that need a limit it needs.
func Ahead(q *quotav1alpha1.TenantQuota, older []quotav1alpha1.QuotaCharge, c quotav1alpha1.QuotaCharge) []int {
	planned := newTally(q)
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

// growth lists the limits of a quota that a charge asks more of.
func growth(q *quotav1alpha1.TenantQuota, c quotav1alpha1.QuotaCharge) []limitGrowth {
	return newTally(q).growth(c)
}

// tally is a quota's usage as charges are put in, without rereading the
// ledger. Its totals are exact, so taking a charge out never under-counts.
type tally struct {
	hard    quotav1alpha1.QuotaLimits
	used    totals
	charges map[types.UID]quotav1alpha1.QuotaCharge
	labels  []string // of the GPU limits
}

func newTally(q *quotav1alpha1.TenantQuota) *tally {
	t := &tally{hard: q.Spec.Hard, used: totalsOf(q.Spec.Hard, q.Status.Charges),
		charges: make(map[types.UID]quotav1alpha1.QuotaCharge, len(q.Status.Charges))}
	for _, c := range q.Status.Charges {
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
		if req := mine.gpus[i]; req > before.gpus[i] {
			total := used.gpus[i]
			total.Add(req)
			out = append(out, limitGrowth{Excess{Limit: t.labels[i], Requested: fmt.Sprint(req),
				Used: fmt.Sprint(used.gpus[i].Int64()), Hard: fmt.Sprint(l.Count)}, total.Exceeds(l.Count)})
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
