package quota

import (
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
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

// tally is a quota's usage as charges are put in, without rereading the ledger.
type tally struct {
	hard    quotav1alpha1.QuotaLimits
	used    quotav1alpha1.QuotaUsage
	charges map[types.UID]quotav1alpha1.QuotaCharge
	labels  []string // of the GPU limits
}

func newTally(q *quotav1alpha1.TenantQuota) *tally {
	t := &tally{hard: q.Spec.Hard, used: Usage(q.Spec.Hard, q.Status.Charges),
		charges: make(map[types.UID]quotav1alpha1.QuotaCharge, len(q.Status.Charges))}
	for _, c := range q.Status.Charges {
		t.charges[c.UID] = c
	}
	for _, l := range q.Spec.Hard.GPUs {
		t.labels = append(t.labels, fmt.Sprintf("gpus %q", l.Name))
	}
	return t
}

// of is the usage of one charge, or of none.
func (t *tally) of(c *quotav1alpha1.QuotaCharge) quotav1alpha1.QuotaUsage {
	if c == nil {
		return Usage(t.hard, nil)
	}
	return Usage(t.hard, []quotav1alpha1.QuotaCharge{*c})
}

// put puts a workspace's charge in, in place of its earlier one.
func (t *tally) put(c quotav1alpha1.QuotaCharge) {
	if old, ok := t.charges[c.UID]; ok {
		addUsage(&t.used, t.of(&old), -1)
	}
	addUsage(&t.used, t.of(&c), 1)
	t.charges[c.UID] = c
}

// addUsage adds (sign 1) or subtracts (sign -1) a usage of the same limits.
func addUsage(dst *quotav1alpha1.QuotaUsage, u quotav1alpha1.QuotaUsage, sign int64) {
	dst.Workspaces += sign * u.Workspaces
	for i := range dst.GPUs {
		dst.GPUs[i].Count += sign * u.GPUs[i].Count
	}
	for _, q := range []struct{ dst, u *resource.Quantity }{{dst.CPU, u.CPU}, {dst.Memory, u.Memory}} {
		switch {
		case q.dst == nil || q.u == nil:
		case sign > 0:
			q.dst.Add(*q.u)
		default:
			q.dst.Sub(*q.u)
		}
	}
}

// growth lists the limits a charge asks more of than the workspace's
// charge in the tally, and whether each then ends above hard.
func (t *tally) growth(c quotav1alpha1.QuotaCharge) []limitGrowth {
	hard := t.hard
	var before quotav1alpha1.QuotaUsage
	used := *t.used.DeepCopy()
	old, had := t.charges[c.UID]
	if had {
		before = t.of(&old)
		addUsage(&used, before, -1)
	} else {
		before = t.of(nil)
	}
	mine := t.of(&c)
	var out []limitGrowth
	if hard.Workspaces != nil && !had {
		out = append(out, limitGrowth{Excess{Limit: "workspaces", Requested: "1", Used: fmt.Sprint(used.Workspaces),
			Hard: fmt.Sprint(*hard.Workspaces)}, used.Workspaces+1 > *hard.Workspaces})
	}
	for i, l := range hard.GPUs {
		if req := mine.GPUs[i].Count; req > before.GPUs[i].Count {
			out = append(out, limitGrowth{Excess{Limit: t.labels[i], Requested: fmt.Sprint(req),
				Used: fmt.Sprint(used.GPUs[i].Count), Hard: fmt.Sprint(l.Count)}, used.GPUs[i].Count+req > l.Count})
		}
	}
	for _, r := range []struct {
		name                     string
		hard, used, mine, before *resource.Quantity
	}{{"cpu", hard.CPU, used.CPU, mine.CPU, before.CPU}, {"memory", hard.Memory, used.Memory, mine.Memory, before.Memory}} {
		if r.hard == nil || r.mine.Cmp(*r.before) <= 0 {
			continue
		}
		total := r.used.DeepCopy()
		total.Add(*r.mine)
		out = append(out, limitGrowth{Excess{Limit: r.name, Requested: r.mine.String(), Used: r.used.String(), Hard: r.hard.String()},
			total.Cmp(*r.hard) > 0})
	}
	return out
}
