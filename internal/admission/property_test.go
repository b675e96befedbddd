package admission

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"testing"
	"time"
)

// The property tests drive a simulated cluster through random sequences of
// node additions, removals and cordons, workspace creations, changes and
// deletions, reconciles (each a Decide on what the process sees: a cache
// that lags behind status writes, and the admissions it remembers writing;
// the admission persisted, or lost to a crash before its status write),
// pods bound and unbound by a scheduler, the cache catching up, and
// restarts (memory lost, the cache synced first), and check after every
// step what the gate promises of the cluster as it really is.

var simSelectors = []map[string]string{nil, h100, poolA, h100Pool, {"exalsius.ai/gpu-model": "A100"}}

var simLabels = []map[string]string{
	h100Pool, h100, poolA, {"exalsius.ai/gpu-model": "A100", "pool": "a"}, {"exalsius.ai/gpu-model": "A100"},
}

type simNode struct {
	labels      map[string]string
	alloc       int64
	schedulable bool
}

type simWorkspace struct {
	uid      string
	created  time.Time
	priority int32
	request  Request    // what the spec asks for now
	admitted *Admission // persisted in status
	version  int        // of the persisted status
	pending  bool       // reached the gate and waits (phase Waiting), or asks anew
	failed   bool
	// cached is the admission as the process's cache holds it, at cachedVersion:
	// a status write reaches the cache only at a later "sync" step.
	cached        *Admission
	cachedVersion int
	// admittedAt is when its admission was made; leaving is set while a
	// preemption's stop is in flight (its admission and pods go at the
	// step "a preempted workspace stops").
	admittedAt time.Time
	leaving    bool
}

type simPod struct {
	node, ws string
	gpus     int64
}

// chooser makes the simulation's choices: seeded randomness, or fuzz bytes.
type chooser interface {
	IntN(n int) int
	Shuffle(n int, swap func(i, j int))
}

// byteChooser takes its choices from fuzz bytes, then zeros.
type byteChooser struct{ data []byte }

func (b *byteChooser) IntN(n int) int {
	if len(b.data) == 0 {
		return 0
	}
	v := int(b.data[0])
	b.data = b.data[1:]
	return v % n
}

func (b *byteChooser) Shuffle(n int, swap func(i, j int)) {
	for i := n - 1; i > 0; i-- {
		swap(i, b.IntN(i+1))
	}
}

// sim is the simulated cluster and its workspaces' persisted status.
type sim struct {
	t      *testing.T
	rng    chooser
	policy Policy
	// followReservations makes the scheduler bind each replica on the node
	// its admission reserved; otherwise it picks any node with room.
	followReservations bool
	// nodesStable forbids node removals and cordons.
	nodesStable bool
	nodes       map[string]*simNode
	workspaces  map[string]*simWorkspace
	pods        []simPod
	clock       time.Time
	seq         int
	checks      int
	// version numbers status writes; assumed is the process's memory of
	// the admissions it wrote, lost at a restart.
	version int
	assumed *Assumptions[*Admission]
	// preemptions counts the workspaces preempted.
	preemptions int
	// crowded draws small requests on a few full nodes, so that
	// workspaces of a preempting priority often find the room taken.
	crowded bool
}

// snapshot is the cluster as it is: every admission as persisted.
func (s *sim) snapshot() Snapshot {
	return s.snapshotWith(func(_ string, w *simWorkspace) *Admission { return w.admitted })
}

// view is the cluster as the process sees it: admissions from its lagging
// cache, unless it wrote a newer one the cache does not have yet.
func (s *sim) view() Snapshot {
	return s.snapshotWith(func(key string, w *simWorkspace) *Admission {
		return s.assumed.Current(key, strconv.Itoa(w.cachedVersion), w.cached)
	})
}

func (s *sim) snapshotWith(admissionOf func(string, *simWorkspace) *Admission) Snapshot {
	var snap Snapshot
	for name, n := range s.nodes {
		snap.Nodes = append(snap.Nodes, Node{Name: name, Labels: n.labels, Schedulable: n.schedulable,
			GPUs: []GPU{{Resource: nv, Vendor: "NVIDIA", Allocatable: n.alloc}}})
	}
	for _, p := range s.pods {
		snap.Pods = append(snap.Pods, pod(p.node, p.ws, p.gpus))
	}
	for key, w := range s.workspaces {
		ws := Workspace{Key: key, UID: w.uid, Created: w.created, Priority: w.priority, Admitted: admissionOf(key, w),
			Leaving: w.leaving, Since: w.admittedAt}
		if w.pending && !w.failed {
			r := w.request
			ws.Pending = &r
		}
		snap.Workspaces = append(snap.Workspaces, ws)
	}
	sort.Slice(snap.Nodes, func(i, j int) bool { return snap.Nodes[i].Name < snap.Nodes[j].Name })
	sort.Slice(snap.Workspaces, func(i, j int) bool { return snap.Workspaces[i].Key < snap.Workspaces[j].Key })
	return snap
}

// bound is what bound pods use on a node.
func (s *sim) bound(node string) int64 {
	var n int64
	for _, p := range s.pods {
		if p.node == node {
			n += p.gpus
		}
	}
	return n
}

func (s *sim) keys() []string {
	out := make([]string, 0, len(s.workspaces))
	for k := range s.workspaces {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (s *sim) pick() (string, *simWorkspace) {
	keys := s.keys()
	if len(keys) == 0 {
		return "", nil
	}
	k := keys[s.rng.IntN(len(keys))]
	return k, s.workspaces[k]
}

func (s *sim) step() string {
	s.clock = s.clock.Add(time.Duration(s.rng.IntN(3)) * time.Second) // ties in creation time happen
	switch op := s.rng.IntN(16); {
	case op == 0 && !s.crowded:
		name := fmt.Sprintf("n%d", s.rng.IntN(6))
		if _, ok := s.nodes[name]; ok {
			return "add existing node"
		}
		s.nodes[name] = &simNode{labels: simLabels[s.rng.IntN(len(simLabels))], alloc: int64(1 + s.rng.IntN(8)), schedulable: true}
		return "add node " + name
	case op == 1 && !s.nodesStable:
		for name := range s.nodes {
			delete(s.nodes, name)
			kept := s.pods[:0]
			for _, p := range s.pods {
				if p.node != name {
					kept = append(kept, p)
				}
			}
			s.pods = kept
			return "remove node " + name
		}
	case op == 2 && !s.nodesStable:
		for name, n := range s.nodes {
			n.schedulable = !n.schedulable
			return "toggle cordon " + name
		}
	case op == 3 || op == 0 && s.crowded:
		s.seq++
		key := fmt.Sprintf("ns/w%d", s.seq)
		s.workspaces[key] = &simWorkspace{uid: fmt.Sprintf("u%03d", s.rng.IntN(1000)), created: s.clock, request: s.randomRequest(),
			pending: true, priority: s.randomPriority()}
		return "create " + key
	case op == 4:
		if k, _ := s.pick(); k != "" {
			delete(s.workspaces, k)
			s.dropPods(k)
			return "delete " + k
		}
	case op == 5 || op == 6 || op == 7:
		return s.reconcile()
	case op == 8 || op == 9:
		return s.bind()
	case op == 10:
		if len(s.pods) > 0 {
			i := s.rng.IntN(len(s.pods))
			s.pods = append(s.pods[:i], s.pods[i+1:]...)
			return "unbind a pod"
		}
	case op == 11:
		if k, w := s.pick(); w != nil && !w.failed {
			w.request = s.randomRequest()
			w.pending = true
			return "change request of " + k
		}
	case op == 12:
		if k, w := s.pick(); w != nil {
			w.cached, w.cachedVersion = w.admitted, w.version
			return "the cache catches up with " + k
		}
	case op == 14:
		if k, w := s.pick(); w != nil {
			w.priority = s.randomPriority()
			return fmt.Sprintf("priority of %s is now %d", k, w.priority)
		}
	case op == 15:
		return s.stopPreempted()
	case op == 13:
		s.assumed = &Assumptions[*Admission]{}
		for _, w := range s.workspaces {
			w.cached, w.cachedVersion = w.admitted, w.version
		}
		return "restart: memory lost, the cache synced before anything is decided"
	}
	return "nothing"
}

// randomPriority is mostly no priority (0), as most workspaces have none;
// the ties within one priority are served first come, first served.
func (s *sim) randomPriority() int32 {
	return []int32{0, 0, 0, 100, -10, 1000}[s.rng.IntN(6)]
}

func (s *sim) randomRequest() Request {
	if s.crowded {
		return Request{Selector: simSelectors[s.rng.IntN(2)], PerReplica: int64(1 + s.rng.IntN(2)), Replicas: int32(1 + s.rng.IntN(2))}
	}
	return Request{Selector: simSelectors[s.rng.IntN(len(simSelectors))], PerReplica: int64(1 + s.rng.IntN(4)), Replicas: int32(1 + s.rng.IntN(3))}
}

func (s *sim) dropPods(key string) {
	kept := s.pods[:0]
	for _, p := range s.pods {
		if p.ws != key {
			kept = append(kept, p)
		}
	}
	s.pods = kept
}

// reconcile decides one waiting workspace and persists the admission,
// unless the process "crashes" before its status write (the decision is
// then lost, and nothing was delivered).
func (s *sim) reconcile() string {
	k, w := s.pick()
	if w == nil || !w.pending || w.failed {
		return "reconcile nothing"
	}
	planBefore := Plan(s.view(), s.policy)
	d := planBefore[k]
	switch d.Outcome {
	case Fail:
		w.failed = true
		return "reconcile " + k + ": fail"
	case Wait:
		return "reconcile " + k + ": wait " + string(d.Reason) + s.preempt(k, w)
	}
	if s.rng.IntN(8) == 0 {
		return "reconcile " + k + ": admitted, lost to a crash before the status write"
	}
	// What it held before, on each node, beyond its new placement: GPUs
	// it gives back.
	held := map[string]int64{}
	for _, sl := range d.Reserved {
		held[sl.Node] += sl.GPUs
	}
	for _, p := range s.pods {
		if p.ws == k {
			held[p.node] += p.gpus
		}
	}
	for _, sl := range d.Placement {
		held[sl.Node] -= sl.GPUs
	}
	gaveBack := false
	for _, n := range held {
		gaveBack = gaveBack || n > 0
	}
	req := w.request
	req.Resource = d.Resource
	w.admitted = &Admission{Request: req, Placement: d.Placement}
	w.admittedAt = s.clock
	s.version++
	w.version = s.version
	s.assumed.Assume(k, w.admitted, strconv.Itoa(w.version))
	w.pending = false
	s.dropPods(k) // the release is upgraded: its old pods go
	if !gaveBack {
		s.checkYoungerAdmissionKeepsOlder(k, planBefore)
	}
	return "reconcile " + k + ": admit"
}

// bind binds one unbound replica of an admitted workspace, as the
// scheduler would: on a matching schedulable node with room.
func (s *sim) bind() string {
	k, w := s.pick()
	if w == nil || w.admitted == nil {
		return "bind nothing"
	}
	a := w.admitted
	var mine []simPod
	for _, p := range s.pods {
		if p.ws == k {
			mine = append(mine, p)
		}
	}
	if len(mine) >= int(a.Request.Replicas) {
		return "bind nothing"
	}
	room := func(name string) bool {
		n := s.nodes[name]
		return n != nil && n.schedulable && n.alloc-s.bound(name) >= a.Request.PerReplica && labelsMatch(n.labels, a.Request.Selector)
	}
	if s.followReservations {
		// The first reserved slot that no pod of the workspace sits on.
		onNode := map[string]int{}
		for _, p := range mine {
			onNode[p.node]++
		}
		var slot string
		for _, sl := range a.Placement {
			if onNode[sl.Node] > 0 {
				onNode[sl.Node]--
				continue
			}
			slot = sl.Node
			break
		}
		if !room(slot) {
			s.fail("replica %d of %s does not fit on its reserved node %s (bound %d of %d): the gate over-booked",
				len(mine), k, slot, s.bound(slot), s.nodes[slot].alloc)
		}
		s.pods = append(s.pods, simPod{node: slot, ws: k, gpus: a.Request.PerReplica})
		return "bind " + k + " on " + slot
	}
	var candidates []string
	for name := range s.nodes {
		if room(name) {
			candidates = append(candidates, name)
		}
	}
	if len(candidates) == 0 {
		return "bind " + k + ": pending"
	}
	sort.Strings(candidates)
	node := candidates[s.rng.IntN(len(candidates))]
	s.pods = append(s.pods, simPod{node: node, ws: k, gpus: a.Request.PerReplica})
	return "bind " + k + " on " + node
}

func labelsMatch(labels, sel map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

var simTrace []string

func (s *sim) trace() string { return fmt.Sprintf("after %d steps", len(simTrace)) }

func runSim(t *testing.T, seed uint64, steps int, policy Policy, follow bool) *sim {
	return runSimWith(t, rand.New(rand.NewPCG(seed, seed^0x9e3779b9)), steps, policy, follow)
}

func runSimWith(t *testing.T, rng chooser, steps int, policy Policy, follow bool) *sim {
	s := &sim{t: t, rng: rng, policy: policy, followReservations: follow, nodesStable: follow,
		nodes: map[string]*simNode{}, workspaces: map[string]*simWorkspace{}, clock: t0, assumed: &Assumptions[*Admission]{}}
	simTrace = simTrace[:0]
	for range steps {
		simTrace = append(simTrace, s.step())
		s.check()
	}
	return s
}

// TestGateProperties runs seeded random sequences under both policies, with
// a scheduler that binds anywhere it can and with one that follows the
// reservations (nodes then stay: a request that passed the gate must always
// bind where it was placed). Set APIARY_SIM_SEEDS for more sequences.
func TestGateProperties(t *testing.T) {
	seeds := 150
	if testing.Short() {
		seeds = 20
	}
	for _, policy := range []Policy{StrictFIFO, BestEffortFIFO} {
		for _, follow := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/follow=%v", policy, follow), func(t *testing.T) {
				preempted := 0
				for seed := range uint64(seeds) {
					preempted += runSim(t, seed, 150, policy, follow).preemptions
				}
				t.Logf("%d workspaces preempted over %d sequences (TestPreemptionSequences preempts more)", preempted, seeds)
			})
		}
	}
}

// FuzzGate lets the fuzzer choose the sequence: its first byte picks the
// policy and the scheduler, the rest every step's choices.
// go test ./internal/admission -run '^$' -fuzz FuzzGate -fuzztime 60s
func FuzzGate(f *testing.F) {
	f.Add([]byte{0, 0, 3, 3, 5, 5, 8, 8})
	f.Add([]byte{3, 0, 1, 3, 1, 2, 5, 0, 5, 1, 8, 0, 11, 0, 5, 0, 4, 0})
	f.Add([]byte("\x01\x00\x07\x03\x02\x01\x00\x05\x05\x08\x09\x0a\x0b\x05\x05"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		policy := []Policy{StrictFIFO, BestEffortFIFO}[data[0]&1]
		follow := data[0]&2 != 0
		runSimWith(t, &byteChooser{data: data[1:]}, min(len(data), 400), policy, follow)
	})
}

// simPreempts and simMinRuntime are the sim's priority classes: the two
// highest priorities preempt; the lower ones run a while before they may
// be preempted.
func simPreempts(priority int32) bool { return priority >= 100 }

func simMinRuntime(priority int32) time.Duration {
	return map[int32]time.Duration{0: 2 * time.Second, 100: time.Second}[priority]
}

// preempt lets a waiting workspace of a preempting priority stop others,
// as the controller does, and checks the preemption at the moment it is
// made: every victim admitted, not leaving, of a strictly lower priority
// (no cycles), past its minimum runtime; the request does not fit once
// the workspaces already leaving are gone (no second preemptor for the
// room they free), and does once the victims are gone too.
func (s *sim) preempt(k string, w *simWorkspace) string {
	if !simPreempts(w.priority) {
		return ""
	}
	view := s.view()
	allowed := func(v *Workspace) bool { return s.clock.Sub(v.Since) >= simMinRuntime(v.Priority) }
	p := Preempt(view, k, s.policy, allowed)
	if len(p.Victims) == 0 {
		return ""
	}
	leaving := map[string]bool{}
	for key, o := range s.workspaces {
		if o.leaving {
			leaving[key] = true
		}
	}
	if Plan(without(view, leaving), s.policy)[k].Outcome == Admit {
		s.fail("%s preempts %v although it fits once the workspaces already leaving are gone", k, p.Victims)
	}
	if Plan(without(view, union(leaving, p.Victims)), s.policy)[k].Outcome != Admit {
		s.fail("%s preempts %v, which does not make it fit", k, p.Victims)
	}
	for _, v := range p.Victims {
		o := s.workspaces[v]
		switch {
		case o == nil || o.admitted == nil || o.leaving:
			s.fail("%s preempts %s, which is not admitted or is leaving", k, v)
		case o.priority >= w.priority:
			s.fail("%s (priority %d) preempts %s of priority %d", k, w.priority, v, o.priority)
		case s.clock.Sub(o.admittedAt) < simMinRuntime(o.priority):
			s.fail("%s preempts %s after %s, before its minimum runtime %s", k, v, s.clock.Sub(o.admittedAt), simMinRuntime(o.priority))
		}
		o.leaving = true
		s.preemptions++
	}
	return fmt.Sprintf(", preempts %v", p.Victims)
}

// stopPreempted finishes the stop of one preempted workspace: its
// admission and pods go, and it queues again (Eviction: from now).
func (s *sim) stopPreempted() string {
	for _, k := range s.keys() {
		w := s.workspaces[k]
		if !w.leaving {
			continue
		}
		w.leaving, w.admitted, w.pending, w.failed, w.created = false, nil, true, false, s.clock
		s.version++
		w.version = s.version
		s.assumed.Assume(k, nil, strconv.Itoa(w.version))
		s.dropPods(k)
		return "the preempted " + k + " stopped and queues again"
	}
	return "nothing"
}

// TestPreemptionSequences runs the gate's properties, and the preemption's
// checks at every preemption, on crowded clusters: three nodes of four
// GPUs, small requests, so that a workspace of a preempting priority often
// finds the room taken by lower ones, past their minimum runtime or not.
func TestPreemptionSequences(t *testing.T) {
	seeds := 120
	if testing.Short() {
		seeds = 30
	}
	for _, policy := range []Policy{StrictFIFO, BestEffortFIFO} {
		t.Run(string(policy), func(t *testing.T) {
			preempted := 0
			for seed := range uint64(seeds) {
				s := &sim{t: t, rng: rand.New(rand.NewPCG(seed, 0x5eed)), policy: policy, followReservations: true, nodesStable: true,
					nodes: map[string]*simNode{}, workspaces: map[string]*simWorkspace{}, clock: t0, assumed: &Assumptions[*Admission]{},
					crowded: true}
				for i, l := range []map[string]string{h100, h100, poolA} {
					s.nodes[fmt.Sprintf("n%d", i)] = &simNode{labels: l, alloc: 4, schedulable: true}
				}
				simTrace = simTrace[:0]
				for range 200 {
					simTrace = append(simTrace, s.step())
					s.check()
				}
				preempted += s.preemptions
			}
			if preempted < seeds/4 {
				t.Fatalf("%d workspaces preempted over %d sequences: the preemption properties were barely exercised", preempted, seeds)
			}
			t.Logf("%d workspaces preempted over %d sequences", preempted, seeds)
		})
	}
}
