package admission

import (
	"reflect"
	"strings"
)

// check asserts the invariants of the plan of the current state.
func (s *sim) check() {
	s.checks++
	snap := s.snapshot()
	plan := Plan(snap, s.policy)

	// Reserved GPUs plus bound pods never exceed a node's allocatable GPUs.
	held := map[string]int64{}
	for _, d := range plan {
		for _, sl := range d.Reserved {
			held[sl.Node] += sl.GPUs
		}
	}
	for name, n := range s.nodes {
		if total := held[name] + s.bound(name); total > n.alloc {
			s.fail("node %s holds %d reserved + bound GPUs of %d", name, total, n.alloc)
		}
	}
	// Each admission decided now fits beside the others, a changed
	// request reusing what its own workspace holds on a node.
	taken := map[string]int64{}
	for name := range s.nodes {
		taken[name] = held[name] + s.bound(name)
	}
	for _, k := range s.keys() {
		d := plan[k]
		if d.Outcome != Admit || !s.workspaces[k].pending {
			continue
		}
		own := map[string]int64{}
		for _, sl := range d.Reserved {
			own[sl.Node] += sl.GPUs
		}
		for _, p := range s.pods {
			if p.ws == k {
				own[p.node] += p.gpus
			}
		}
		use := map[string]int64{}
		for _, sl := range d.Placement {
			use[sl.Node] += sl.GPUs
		}
		for node, u := range use {
			taken[node] += max(u-own[node], 0)
		}
	}
	for name, n := range s.nodes {
		if taken[name] > n.alloc {
			s.fail("node %s would take %d GPUs of %d if every admission decided now went ahead", name, taken[name], n.alloc)
		}
	}
	s.checkFCFS(snap, plan)
	s.checkDeterministic(snap, plan)
}

// checkFCFS: priority order, then first come, first served. A request
// later in the queue (a lower priority, or as high and younger) never
// changes the decision on one ahead of it, and under StrictFIFO no request
// is admitted while one ahead of it that could use one of its nodes waits.
func (s *sim) checkFCFS(snap Snapshot, plan map[string]Decision) {
	for _, k := range s.keys() {
		w := s.workspaces[k]
		if !w.pending || w.failed {
			continue
		}
		var older Snapshot
		older.Nodes, older.Pods = snap.Nodes, snap.Pods
		for _, o := range snap.Workspaces {
			ow := o
			if o.Pending != nil && o.Key != k && s.ref(k).before(&ow) {
				o.Pending = nil // younger requests leave
			}
			older.Workspaces = append(older.Workspaces, o)
		}
		if got := Decide(older, k, s.policy); !reflect.DeepEqual(got, plan[k]) {
			s.fail("younger requests changed the decision on %s: %+v without them, %+v with them", k, got, plan[k])
		}
		if s.policy != StrictFIFO || plan[k].Outcome != Admit {
			continue
		}
		for _, o := range snap.Workspaces {
			od := plan[o.Key]
			if o.Pending == nil || o.Key == k || od.Outcome != Wait || !(&o).before(s.ref(k)) {
				continue
			}
			if s.shareNode(o.Pending, &w.request) {
				s.fail("%s admitted while the older %s waits (%s) for a node it could use", k, o.Key, od.Reason)
			}
		}
	}
}

// ref is a workspace's place in the queue.
func (s *sim) ref(key string) *Workspace {
	w := s.workspaces[key]
	return &Workspace{Key: key, UID: w.uid, Created: w.created, Priority: w.priority}
}

// shareNode reports whether two requests could use a common schedulable node.
func (s *sim) shareNode(a, b *Request) bool {
	for _, n := range s.nodes {
		if n.schedulable && n.alloc >= a.PerReplica && n.alloc >= b.PerReplica &&
			labelsMatch(n.labels, a.Selector) && labelsMatch(n.labels, b.Selector) {
			return true
		}
	}
	return false
}

// checkDeterministic: the order of the snapshot's slices does not matter,
// as after a restart that lists everything anew.
func (s *sim) checkDeterministic(snap Snapshot, plan map[string]Decision) {
	shuffled := Snapshot{
		Nodes:      append([]Node(nil), snap.Nodes...),
		Pods:       append([]Pod(nil), snap.Pods...),
		Workspaces: append([]Workspace(nil), snap.Workspaces...),
	}
	s.rng.Shuffle(len(shuffled.Nodes), func(i, j int) { shuffled.Nodes[i], shuffled.Nodes[j] = shuffled.Nodes[j], shuffled.Nodes[i] })
	s.rng.Shuffle(len(shuffled.Pods), func(i, j int) { shuffled.Pods[i], shuffled.Pods[j] = shuffled.Pods[j], shuffled.Pods[i] })
	s.rng.Shuffle(len(shuffled.Workspaces), func(i, j int) {
		shuffled.Workspaces[i], shuffled.Workspaces[j] = shuffled.Workspaces[j], shuffled.Workspaces[i]
	})
	if got := Plan(shuffled, s.policy); !reflect.DeepEqual(got, plan) {
		s.fail("the plan depends on the order of the snapshot")
	}
}

// checkYoungerAdmissionKeepsOlder: once a request is admitted, every older
// request that fitted before still fits. The caller skips it when the
// admitted request gives back GPUs it held (a smaller request): first-fit
// may then place a request ahead of an older one on the freed node rather
// than where it was placed before, and the older one, which fitted beside
// it, waits behind it (found by TestPreemptionSequences: a priority-1000
// request moved onto a node that a shrinking priority -10 workspace freed,
// and a priority-0 one that fitted there beside it waited).
// Nothing is over-booked and no priority is inverted; it is first-fit's
// loss of packing, not a broken promise of the queue.
func (s *sim) checkYoungerAdmissionKeepsOlder(admitted string, before map[string]Decision) {
	after := Plan(s.view(), s.policy)
	for k, w := range s.workspaces {
		if k == admitted || !w.pending || w.failed || !s.ref(k).before(s.ref(admitted)) {
			continue
		}
		if b := before[k]; b.Outcome == Admit && after[k].Outcome != Admit {
			s.fail("admitting the younger %s made the older %s wait (%s); it fitted on %v before", admitted, k, after[k].Reason, b.Placement)
		}
	}
}

func (s *sim) fail(format string, args ...any) {
	s.t.Helper()
	s.t.Fatalf("%s: "+format+"\ntrace:\n%s\npods: %+v", append([]any{s.trace()}, append(args, strings.Join(simTrace, "\n"), s.pods)...)...)
}
