package admission

import (
	"cmp"
	"sort"
	"time"

	"github.com/apiaryhq/apiary/internal/fewest"
)

// Preemption by stopping. A pending request that cannot fit may name
// workspaces to stop for it: admitted ones of a strictly lower priority that
// the caller allows (its tenant's, past their minimum runtime), the fewest
// whose going makes the request fit in the planned queue and, among sets as
// small, the first in the order of preference (lowest priority, then the
// youngest admission), as fewest.Choose finds them. The plan decides
// "fits": per node, after every request ahead in the queue, so GPUs freed
// on nodes the request cannot use, or that a request ahead of it would
// take, preempt no one.
//
// What workspaces already leaving (stopping, preempted before) hold counts
// as freed: a request that fits once they are gone preempts no one more, so
// two preemptors never stop workspaces for the same room. Victims are of a
// lower priority than their preemptor and queue again behind it, so no
// preemption undoes another: there are no cycles.

// Preemption is what a preemptor may do.
type Preemption struct {
	// Victims are the keys of the workspaces to stop, in the order of
	// preference; empty when stopping workspaces would not make it fit,
	// or it fits already.
	Victims []string
	// Freeing is set when the request fits once the workspaces already
	// leaving are gone: it waits for them and preempts no one.
	Freeing bool
}

// Preempt finds the workspaces the pending request of key should stop to
// fit. candidate says which workspaces the caller allows as victims; it is
// asked only of admitted, not leaving workspaces of a lower priority.
func Preempt(s Snapshot, key string, policy Policy, candidate func(*Workspace) bool) Preemption {
	var self *Workspace
	for i := range s.Workspaces {
		if s.Workspaces[i].Key == key {
			self = &s.Workspaces[i]
		}
	}
	if self == nil || self.Pending == nil || self.Pending.Demand() <= 0 {
		return Preemption{}
	}
	leaving := map[string]bool{}
	for _, w := range s.Workspaces {
		if w.Leaving && w.Key != key {
			leaving[w.Key] = true
		}
	}
	fits := func(gone map[string]bool) bool {
		return Plan(without(s, gone), policy)[key].Outcome == Admit
	}
	freeing := func() bool { return len(leaving) > 0 && fits(leaving) }
	// The common answer first: no candidate, or not enough even with all
	// of them gone (one plan).
	cands := preemptionCandidates(without(s, leaving), self, candidate)
	if len(cands) == 0 || !fits(union(leaving, cands)) {
		return Preemption{Freeing: freeing()}
	}
	if fits(leaving) {
		return Preemption{Freeing: len(leaving) > 0}
	}
	chosen := fewest.Choose(len(cands), func(idx []int) bool {
		set := make([]string, len(idx))
		for i, j := range idx {
			set[i] = cands[j]
		}
		return fits(union(leaving, set))
	})
	victims := make([]string, len(chosen))
	for i, j := range chosen {
		victims[i] = cands[j]
	}
	return Preemption{Victims: victims}
}

// preemptionCandidates are the workspaces the caller allows that hold GPUs
// (reserved, or bound pods) on a node the request could use, in the order
// of preference: the lowest priority, then the youngest admission, then
// the key.
func preemptionCandidates(s Snapshot, self *Workspace, candidate func(*Workspace) bool) []string {
	p := newPlanner(s)
	p.reserveAdmitted(map[string]Decision{})
	resource, _, ok := p.resolve(*self.Pending)
	if !ok {
		return nil
	}
	eligible := map[string]bool{}
	for _, n := range p.nodes {
		if matches(n, self.Pending.Selector, resource) && allocatable(n, resource) >= self.Pending.PerReplica {
			eligible[n.Name] = true
		}
	}
	holds := func(key string) bool {
		for _, sl := range p.reserved[key] {
			if eligible[sl.Node] && sl.GPUs > 0 {
				return true
			}
		}
		for _, pod := range p.pods[key] {
			if eligible[pod.Node] && pod.GPUs[resource] > 0 {
				return true
			}
		}
		return false
	}
	var out []*Workspace
	for _, w := range p.workspaces {
		if w.Key == self.Key || w.Admitted == nil || w.Pending != nil || w.Leaving || w.Priority >= self.Priority {
			continue
		}
		if holds(w.Key) && candidate(w) {
			out = append(out, w)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		return VictimOrder(a.Priority, a.Since, a.Key, b.Priority, b.Since, b.Key) < 0
	})
	keys := make([]string, len(out))
	for i, w := range out {
		keys[i] = w.Key
	}
	return keys
}

// VictimOrder is the order of preference of every preemption's victims,
// for GPUs (Preempt) and for room in a TenantQuota: the lowest priority
// first, then the youngest admission (since), then the key. It returns a
// negative number when a is preferred, a positive one when b is, 0 when
// neither.
func VictimOrder(pa int32, sinceA time.Time, keyA string, pb int32, sinceB time.Time, keyB string) int {
	switch {
	case pa != pb:
		return cmp.Compare(pa, pb)
	case !sinceA.Equal(sinceB):
		return sinceB.Compare(sinceA)
	}
	return cmp.Compare(keyA, keyB)
}

// without is the snapshot with the given workspaces gone: no admission, no
// request, no bound pods.
func without(s Snapshot, gone map[string]bool) Snapshot {
	if len(gone) == 0 {
		return s
	}
	out := Snapshot{Nodes: s.Nodes, Workspaces: make([]Workspace, 0, len(s.Workspaces))}
	for _, w := range s.Workspaces {
		if gone[w.Key] {
			continue
		}
		out.Workspaces = append(out.Workspaces, w)
	}
	for _, p := range s.Pods {
		if p.Workspace == "" || !gone[p.Workspace] {
			out.Pods = append(out.Pods, p)
		}
	}
	return out
}

func union(a map[string]bool, b []string) map[string]bool {
	out := make(map[string]bool, len(a)+len(b))
	for k := range a {
		out[k] = true
	}
	for _, k := range b {
		out[k] = true
	}
	return out
}
