package admission

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// running is an admitted workspace holding its GPUs on a node by a bound pod.
func running(key string, prio int32, since int, node string, gpus int64, sel map[string]string) (Workspace, Pod) {
	req := Request{Selector: sel, Resource: "nvidia.com/gpu", PerReplica: gpus, Replicas: 1}
	w := Workspace{Key: key, UID: key, Priority: prio, Created: t0, Since: t0.Add(time.Duration(since) * time.Minute),
		Admitted: &Admission{Request: req, Placement: []Slot{{Node: node, GPUs: gpus}}}}
	return w, Pod{Node: node, Workspace: key, GPUs: map[string]int64{"nvidia.com/gpu": gpus}}
}

func waitingFor(key string, prio int32, created int, per int64, replicas int32, sel map[string]string) Workspace {
	return Workspace{Key: key, UID: key, Priority: prio, Created: t0.Add(time.Duration(created) * time.Minute),
		Pending: &Request{Selector: sel, Resource: "nvidia.com/gpu", PerReplica: per, Replicas: replicas}}
}

func TestPreempt(t *testing.T) {
	a100 := map[string]string{"exalsius.ai/gpu-model": "A100"}
	h100m := map[string]string{"exalsius.ai/gpu-model": "H100"}
	all := func(*Workspace) bool { return true }
	type run struct {
		key         string
		prio        int32
		since       int
		node        string
		gpus        int64
		leaving     bool
		notAllowed  bool
		withoutPods bool
	}
	cases := []struct {
		name    string
		nodes   []Node
		runs    []run
		waiters []Workspace
		self    string
		want    Preemption
	}{
		{name: "a lower priority makes room", nodes: []Node{gpuNode("n1", 4, a100)},
			runs: []run{{key: "t/low", node: "n1", gpus: 4}}, waiters: []Workspace{waitingFor("t/high", 10, 5, 4, 1, a100)},
			self: "t/high", want: Preemption{Victims: []string{"t/low"}}},
		{name: "the same priority is not preempted", nodes: []Node{gpuNode("n1", 4, a100)},
			runs: []run{{key: "t/low", prio: 10, node: "n1", gpus: 4}}, waiters: []Workspace{waitingFor("t/high", 10, 5, 4, 1, a100)},
			self: "t/high"},
		{name: "the youngest of equals", nodes: []Node{gpuNode("n1", 2, a100), gpuNode("n2", 2, a100)},
			runs:    []run{{key: "t/old", node: "n1", gpus: 2, since: 1}, {key: "t/young", node: "n2", gpus: 2, since: 2}},
			waiters: []Workspace{waitingFor("t/high", 10, 5, 2, 1, a100)}, self: "t/high", want: Preemption{Victims: []string{"t/young"}}},
		{name: "the lowest priority before the youngest", nodes: []Node{gpuNode("n1", 2, a100), gpuNode("n2", 2, a100)},
			runs:    []run{{key: "t/lowest", prio: -5, node: "n1", gpus: 2, since: 1}, {key: "t/young", node: "n2", gpus: 2, since: 2}},
			waiters: []Workspace{waitingFor("t/high", 10, 5, 2, 1, a100)}, self: "t/high", want: Preemption{Victims: []string{"t/lowest"}}},
		{name: "the fewest, though older", nodes: []Node{gpuNode("n1", 4, a100)},
			runs: []run{{key: "t/a", node: "n1", gpus: 1, since: 3}, {key: "t/b", node: "n1", gpus: 1, since: 2},
				{key: "t/big", node: "n1", gpus: 2, since: 1}},
			waiters: []Workspace{waitingFor("t/high", 10, 5, 2, 1, a100)}, self: "t/high", want: Preemption{Victims: []string{"t/big"}}},
		{name: "GPUs on the wrong nodes preempt no one", nodes: []Node{gpuNode("n1", 4, a100), gpuNode("n2", 4, h100m)},
			runs:    []run{{key: "t/low", node: "n1", gpus: 4}, {key: "t/other", prio: 20, node: "n2", gpus: 4}},
			waiters: []Workspace{waitingFor("t/high", 10, 5, 4, 1, h100m)}, self: "t/high"},
		{name: "per node: freeing two halves of two nodes does not fit a replica of four", nodes: []Node{gpuNode("n1", 4, a100), gpuNode("n2", 4, a100)},
			runs: []run{{key: "t/l1", node: "n1", gpus: 2}, {key: "t/h1", prio: 20, node: "n1", gpus: 2},
				{key: "t/l2", node: "n2", gpus: 2}, {key: "t/h2", prio: 20, node: "n2", gpus: 2}},
			waiters: []Workspace{waitingFor("t/high", 10, 5, 4, 1, a100)}, self: "t/high"},
		{name: "not allowed (another tenant, or before its minimum runtime)", nodes: []Node{gpuNode("n1", 4, a100)},
			runs:    []run{{key: "u/low", node: "n1", gpus: 4, notAllowed: true}},
			waiters: []Workspace{waitingFor("t/high", 10, 5, 4, 1, a100)}, self: "t/high"},
		{name: "room being freed is waited for", nodes: []Node{gpuNode("n1", 4, a100)},
			runs:    []run{{key: "t/leaving", node: "n1", gpus: 4, leaving: true}},
			waiters: []Workspace{waitingFor("t/high", 10, 5, 4, 1, a100)}, self: "t/high", want: Preemption{Freeing: true}},
		{name: "a second preemptor does not stop anyone for the room the first is freeing", nodes: []Node{gpuNode("n1", 4, a100)},
			runs:    []run{{key: "t/leaving", node: "n1", gpus: 4, leaving: true}},
			waiters: []Workspace{waitingFor("t/first", 10, 1, 4, 1, a100), waitingFor("t/second", 10, 5, 4, 1, a100)},
			self:    "t/second"},
		{name: "room the first is freeing, and more for the second", nodes: []Node{gpuNode("n1", 4, a100), gpuNode("n2", 4, a100)},
			runs:    []run{{key: "t/leaving", node: "n1", gpus: 4, leaving: true}, {key: "t/low", node: "n2", gpus: 4}},
			waiters: []Workspace{waitingFor("t/first", 10, 1, 4, 1, a100), waitingFor("t/second", 10, 5, 4, 1, a100)},
			self:    "t/second", want: Preemption{Victims: []string{"t/low"}}},
		{name: "a reservation without pods counts", nodes: []Node{gpuNode("n1", 4, a100)},
			runs:    []run{{key: "t/low", node: "n1", gpus: 4, withoutPods: true}},
			waiters: []Workspace{waitingFor("t/high", 10, 5, 4, 1, a100)}, self: "t/high", want: Preemption{Victims: []string{"t/low"}}},
		{name: "nothing to do when it fits", nodes: []Node{gpuNode("n1", 8, a100)},
			runs:    []run{{key: "t/low", node: "n1", gpus: 4}},
			waiters: []Workspace{waitingFor("t/high", 10, 5, 4, 1, a100)}, self: "t/high"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			s := Snapshot{Nodes: tc.nodes}
			refused := map[string]bool{}
			for _, r := range tc.runs {
				w, pod := running(r.key, r.prio, r.since, r.node, r.gpus, nil)
				w.Leaving = r.leaving
				refused[r.key] = r.notAllowed
				s.Workspaces = append(s.Workspaces, w)
				if !r.withoutPods {
					s.Pods = append(s.Pods, pod)
				}
			}
			s.Workspaces = append(s.Workspaces, tc.waiters...)
			got := Preempt(s, tc.self, StrictFIFO, func(w *Workspace) bool { return !refused[w.Key] && all(w) })
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

// TestPreemptProperties checks Preempt on random clusters against a brute
// force search: every victim is allowed, admitted, not leaving and of a
// lower priority; the victims make the request fit and no smaller set, nor
// a set as small earlier in the order of preference, does; no victims
// when it fits already, when the room being freed is enough, or when even
// every candidate's going would not make it fit; and the answer does not
// depend on the order of the snapshot.
func TestPreemptProperties(t *testing.T) {
	cases := 3000
	if testing.Short() {
		cases = 300
	}
	for seed := range uint64(cases) {
		checkPreempt(t, rand.New(rand.NewPCG(seed, 7)), seed)
	}
}

func FuzzPreempt(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Fuzz(func(t *testing.T, data []byte) { checkPreempt(t, &byteChooser{data: data}, 0) })
}

func checkPreempt(t *testing.T, rng chooser, seed uint64) {
	t.Helper()
	labels := []map[string]string{h100, {"exalsius.ai/gpu-model": "A100"}}
	sels := []map[string]string{nil, h100, {"exalsius.ai/gpu-model": "A100"}}
	var s Snapshot
	for i := range 1 + rng.IntN(3) {
		s.Nodes = append(s.Nodes, gpuNode(fmt.Sprintf("n%d", i), int64(1+rng.IntN(4)), labels[rng.IntN(len(labels))]))
	}
	// Admit workspaces one by one, as the gate would.
	for i := range 1 + rng.IntN(7) {
		key := fmt.Sprintf("t/r%d", i)
		w := waitingFor(key, int32(rng.IntN(3)), i, int64(1+rng.IntN(2)), int32(1+rng.IntN(2)), sels[rng.IntN(len(sels))])
		w.Since = t0.Add(time.Duration(rng.IntN(5)) * time.Minute)
		s.Workspaces = append(s.Workspaces, w)
		d := Decide(s, key, StrictFIFO)
		last := &s.Workspaces[len(s.Workspaces)-1]
		if d.Outcome != Admit {
			s.Workspaces = s.Workspaces[:len(s.Workspaces)-1]
			continue
		}
		last.Admitted, last.Pending, last.Leaving = &Admission{Request: *last.Pending, Placement: d.Placement}, nil, rng.IntN(5) == 0
		if rng.IntN(2) == 0 {
			for _, sl := range d.Placement {
				s.Pods = append(s.Pods, Pod{Node: sl.Node, Workspace: key, GPUs: map[string]int64{"nvidia.com/gpu": sl.GPUs}})
			}
		}
	}
	for i := range rng.IntN(3) {
		s.Workspaces = append(s.Workspaces, waitingFor(fmt.Sprintf("t/w%d", i), int32(rng.IntN(4)), 10+i, int64(1+rng.IntN(3)), int32(1+rng.IntN(2)), sels[rng.IntN(len(sels))]))
	}
	self := waitingFor("t/self", int32(1+rng.IntN(3)), 10+rng.IntN(4), int64(1+rng.IntN(4)), int32(1+rng.IntN(2)), sels[rng.IntN(len(sels))])
	s.Workspaces = append(s.Workspaces, self)
	refused := map[string]bool{}
	for _, w := range s.Workspaces {
		refused[w.Key] = rng.IntN(6) == 0
	}
	allowed := func(w *Workspace) bool { return !refused[w.Key] }
	policy := []Policy{StrictFIFO, BestEffortFIFO}[rng.IntN(2)]
	got := Preempt(s, self.Key, policy, allowed)
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d: %s\nsnapshot: %+v\ngot: %+v", seed, fmt.Sprintf(format, args...), s, got)
	}

	byKey := map[string]Workspace{}
	leaving := map[string]bool{}
	for _, w := range s.Workspaces {
		byKey[w.Key] = w
		if w.Leaving {
			leaving[w.Key] = true
		}
	}
	fits := func(set []string) bool {
		return Plan(without(s, union(leaving, set)), policy)[self.Key].Outcome == Admit
	}
	// The candidates: allowed, admitted, not leaving, of a lower priority,
	// holding GPUs on a node the request could use.
	eligible := map[string]bool{}
	for _, n := range s.Nodes {
		if labelsMatch(n.Labels, self.Pending.Selector) && n.GPUs[0].Allocatable >= self.Pending.PerReplica {
			eligible[n.Name] = true
		}
	}
	var cands []string
	for _, w := range s.Workspaces {
		if w.Admitted == nil || w.Leaving || w.Priority >= self.Priority || !allowed(&w) {
			continue
		}
		if slices.ContainsFunc(w.Admitted.Placement, func(sl Slot) bool { return eligible[sl.Node] }) {
			cands = append(cands, w.Key)
		}
	}
	for _, v := range got.Victims {
		w := byKey[v]
		if w.Admitted == nil || w.Leaving || w.Priority >= self.Priority || refused[v] || !slices.Contains(cands, v) {
			fail("victim %s is not admitted, is leaving, is not of a lower priority, is not allowed, or holds no GPU the request could use", v)
		}
	}
	if got.Freeing != (len(leaving) > 0 && fits(nil)) {
		fail("freeing is %v, but fits once the leaving go: %v", got.Freeing, fits(nil))
	}
	if got.Freeing && len(got.Victims) > 0 {
		fail("freeing and victims at once")
	}
	if fits(nil) {
		if len(got.Victims) > 0 {
			fail("victims although it fits once the leaving go")
		}
		return
	}
	if !fits(cands) {
		if len(got.Victims) > 0 {
			fail("victims although even every candidate's going would not make it fit")
		}
		return
	}
	if len(got.Victims) == 0 {
		fail("no victims although stopping candidates makes it fit")
	}
	if !fits(got.Victims) {
		fail("the victims do not make it fit")
	}
	// Brute force: no smaller set fits; no set as small fits that comes
	// first in the order of preference.
	order := preemptionCandidates(without(s, leaving), &s.Workspaces[len(s.Workspaces)-1], allowed)
	if !slices.Equal(slices.Sorted(slices.Values(order)), slices.Sorted(slices.Values(cands))) {
		fail("candidates %v, want %v", order, cands)
	}
	rank := map[string]int{}
	for i, k := range order {
		rank[k] = i
	}
	gotRanks := make([]int, len(got.Victims))
	for i, v := range got.Victims {
		gotRanks[i] = rank[v]
	}
	for mask := range 1 << len(order) {
		var idx []int
		var set []string
		for j := range order {
			if mask&(1<<j) != 0 {
				idx, set = append(idx, j), append(set, order[j])
			}
		}
		if len(set) == 0 || len(set) > len(got.Victims) || !fits(set) {
			continue
		}
		if len(set) < len(got.Victims) {
			fail("%v fits with fewer victims", set)
		}
		if slices.Compare(idx, gotRanks) < 0 {
			fail("%v fits and comes first in the order of preference", set)
		}
	}
	// The order of the snapshot does not matter.
	shuffled := Snapshot{Nodes: slices.Clone(s.Nodes), Pods: slices.Clone(s.Pods), Workspaces: slices.Clone(s.Workspaces)}
	rng.Shuffle(len(shuffled.Workspaces), func(i, j int) {
		shuffled.Workspaces[i], shuffled.Workspaces[j] = shuffled.Workspaces[j], shuffled.Workspaces[i]
	})
	rng.Shuffle(len(shuffled.Pods), func(i, j int) { shuffled.Pods[i], shuffled.Pods[j] = shuffled.Pods[j], shuffled.Pods[i] })
	if again := Preempt(shuffled, self.Key, policy, allowed); !slices.Equal(again.Victims, got.Victims) || again.Freeing != got.Freeing {
		fail("another order of the snapshot gives %+v", again)
	}
}
