package admission

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

const nv = "nvidia.com/gpu"

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func gpuNode(name string, count int64, labels map[string]string) Node {
	return Node{Name: name, Labels: labels, Schedulable: true, GPUs: []GPU{{Resource: nv, Vendor: "NVIDIA", Allocatable: count}}}
}

func req(sel map[string]string, per int64, replicas int32) *Request {
	return &Request{Selector: sel, PerReplica: per, Replicas: replicas}
}

// waiting is a workspace at the gate, created at t0 plus age seconds.
func waiting(key string, age int, r *Request) Workspace {
	return Workspace{Key: key, UID: "uid-" + key, Created: t0.Add(time.Duration(age) * time.Second), Pending: r}
}

// prioritised gives a workspace a priority.
func prioritised(w Workspace, p int32) Workspace {
	w.Priority = p
	return w
}

// admittedOn is a workspace whose admission is in force on the given nodes.
func admittedOn(key string, age int, r *Request, nodes ...string) Workspace {
	w := waiting(key, age, nil)
	a := &Admission{Request: *r}
	a.Request.Resource = nv
	for _, n := range nodes {
		a.Placement = append(a.Placement, Slot{Node: n, GPUs: r.PerReplica})
	}
	w.Admitted = a
	return w
}

func pod(node, ws string, gpus int64) Pod {
	return Pod{Node: node, Workspace: ws, GPUs: map[string]int64{nv: gpus}}
}

var (
	h100     = map[string]string{"exalsius.ai/gpu-model": "H100"}
	poolA    = map[string]string{"pool": "a"}
	h100Pool = map[string]string{"exalsius.ai/gpu-model": "H100", "pool": "a"}
)

func TestDecide(t *testing.T) {
	cases := []struct {
		name      string
		snap      Snapshot
		key       string
		policy    Policy
		outcome   Outcome
		reason    Reason
		placement []Slot
		free      int64
		ahead     []string
	}{
		{
			name:    "fits on one node",
			snap:    Snapshot{Nodes: []Node{gpuNode("n1", 2, h100)}, Workspaces: []Workspace{waiting("a", 0, req(h100, 2, 1))}},
			key:     "a",
			outcome: Admit, reason: Fits, placement: []Slot{{"n1", 2}}, free: 2,
		},
		{
			name:    "no matching node fails",
			snap:    Snapshot{Nodes: []Node{gpuNode("n1", 2, poolA)}, Workspaces: []Workspace{waiting("a", 0, req(h100, 1, 1))}},
			key:     "a",
			outcome: Fail, reason: NoOffering,
		},
		{
			name:    "cordoned nodes offer nothing",
			snap:    Snapshot{Nodes: []Node{{Name: "n1", Labels: h100, GPUs: []GPU{{Resource: nv, Allocatable: 8}}}}, Workspaces: []Workspace{waiting("a", 0, req(h100, 1, 1))}},
			key:     "a",
			outcome: Fail, reason: NoOffering,
		},
		{
			name: "a replica larger than every matching node fails",
			snap: Snapshot{Nodes: []Node{gpuNode("n1", 1, h100), gpuNode("n2", 1, h100)},
				Workspaces: []Workspace{waiting("a", 0, req(h100, 2, 1))}},
			key:     "a",
			outcome: Fail, reason: ReplicaTooLarge,
		},
		{
			name: "replicas spread over nodes that each hold one",
			snap: Snapshot{Nodes: []Node{gpuNode("n1", 2, h100), gpuNode("n2", 2, h100)},
				Workspaces: []Workspace{waiting("a", 0, req(h100, 2, 2))}},
			key:     "a",
			outcome: Admit, reason: Fits, placement: []Slot{{"n1", 2}, {"n2", 2}}, free: 4,
		},
		{
			name: "free GPUs spread so that no node holds a replica wait as fragmented",
			snap: Snapshot{Nodes: []Node{gpuNode("n1", 4, h100), gpuNode("n2", 4, h100)},
				Pods:       []Pod{pod("n1", "", 2), pod("n2", "", 2)},
				Workspaces: []Workspace{waiting("a", 0, req(h100, 4, 1))}},
			key:     "a",
			outcome: Wait, reason: Fragmented, free: 4,
		},
		{
			name: "not enough free in all waits as insufficient",
			snap: Snapshot{Nodes: []Node{gpuNode("n1", 4, h100)}, Pods: []Pod{pod("n1", "", 3)},
				Workspaces: []Workspace{waiting("a", 0, req(h100, 2, 1))}},
			key:     "a",
			outcome: Wait, reason: Insufficient, free: 1,
		},
		{
			name: "a reservation under another selector on the same node counts",
			snap: Snapshot{Nodes: []Node{gpuNode("n1", 2, h100Pool)},
				Workspaces: []Workspace{admittedOn("a", 0, req(h100, 2, 1), "n1"), waiting("b", 1, req(poolA, 1, 1))}},
			key:     "b",
			outcome: Wait, reason: Insufficient, free: 0,
		},
		{
			name: "a request without selector sees reservations of selected ones",
			snap: Snapshot{Nodes: []Node{gpuNode("n1", 2, h100)},
				Workspaces: []Workspace{admittedOn("a", 0, req(h100, 2, 1), "n1"), waiting("b", 1, req(nil, 1, 1))}},
			key:     "b",
			outcome: Wait, reason: Insufficient,
		},
		{
			name: "a bound pod of an admission releases its reservation",
			snap: Snapshot{Nodes: []Node{gpuNode("n1", 4, h100)}, Pods: []Pod{pod("n1", "a", 2)},
				Workspaces: []Workspace{admittedOn("a", 0, req(h100, 2, 1), "n1"), waiting("b", 1, req(nil, 2, 1))}},
			key:     "b",
			outcome: Admit, reason: Fits, placement: []Slot{{"n1", 2}}, free: 2,
		},
		{
			name: "a pod bound elsewhere than reserved moves the reservation's accounting to that node",
			snap: Snapshot{Nodes: []Node{gpuNode("n1", 2, h100), gpuNode("n2", 2, h100)}, Pods: []Pod{pod("n2", "a", 2)},
				Workspaces: []Workspace{admittedOn("a", 0, req(h100, 2, 1), "n1"), waiting("b", 1, req(h100, 2, 1))}},
			key:     "b",
			outcome: Admit, reason: Fits, placement: []Slot{{"n1", 2}}, free: 2,
		},
		{
			name: "a smaller pod does not count as a replica",
			snap: Snapshot{Nodes: []Node{gpuNode("n1", 4, h100)}, Pods: []Pod{pod("n1", "a", 1)},
				Workspaces: []Workspace{admittedOn("a", 0, req(h100, 2, 1), "n1"), waiting("b", 1, req(nil, 2, 1))}},
			key:     "b",
			outcome: Wait, reason: Insufficient, free: 1,
		},
		{
			name: "strict FIFO: a younger request waits behind an older one that shares a node",
			snap: Snapshot{Nodes: []Node{gpuNode("n1", 4, h100Pool), gpuNode("n2", 1, poolA)},
				Pods:       []Pod{pod("n1", "", 2)},
				Workspaces: []Workspace{waiting("big", 0, req(h100, 4, 1)), waiting("small", 1, req(poolA, 1, 1))}},
			key: "small", policy: StrictFIFO,
			outcome: Wait, reason: Queued, ahead: []string{"big"}, free: 3,
		},
		{
			name: "best-effort FIFO: a younger request that fits goes ahead",
			snap: Snapshot{Nodes: []Node{gpuNode("n1", 4, h100Pool), gpuNode("n2", 1, poolA)},
				Pods:       []Pod{pod("n1", "", 2)},
				Workspaces: []Workspace{waiting("big", 0, req(h100, 4, 1)), waiting("small", 1, req(poolA, 1, 1))}},
			key: "small", policy: BestEffortFIFO,
			outcome: Admit, reason: Fits, placement: []Slot{{"n1", 1}}, free: 3,
		},
		{
			name: "strict FIFO: requests on disjoint nodes do not wait for each other",
			snap: Snapshot{Nodes: []Node{gpuNode("n1", 1, h100), gpuNode("n2", 1, poolA)},
				Pods:       []Pod{pod("n1", "", 1)},
				Workspaces: []Workspace{waiting("old", 0, req(h100, 1, 1)), waiting("young", 1, req(poolA, 1, 1))}},
			key: "young", policy: StrictFIFO,
			outcome: Admit, reason: Fits, placement: []Slot{{"n2", 1}}, free: 1,
		},
		{
			name: "an older request that fits is placed first and the younger takes what is left",
			snap: Snapshot{Nodes: []Node{gpuNode("n1", 2, h100), gpuNode("n2", 2, h100)},
				Workspaces: []Workspace{waiting("young", 5, req(nil, 2, 1)), waiting("old", 0, req(h100, 2, 1))}},
			key: "young", policy: StrictFIFO,
			outcome: Admit, reason: Fits, placement: []Slot{{"n2", 2}}, free: 2,
		},
		{
			name: "a younger request of a higher priority is served before an older one",
			snap: Snapshot{Nodes: []Node{gpuNode("n1", 2, h100)},
				Workspaces: []Workspace{waiting("old", 0, req(h100, 2, 1)), prioritised(waiting("urgent", 9, req(h100, 2, 1)), 100)}},
			key: "urgent", policy: StrictFIFO,
			outcome: Admit, reason: Fits, placement: []Slot{{"n1", 2}}, free: 2,
		},
		{
			name: "an older request of a lower priority waits behind a younger one of a higher priority",
			snap: Snapshot{Nodes: []Node{gpuNode("n1", 2, h100)}, Pods: []Pod{pod("n1", "", 1)},
				Workspaces: []Workspace{waiting("old", 0, req(h100, 1, 1)), prioritised(waiting("urgent", 9, req(h100, 2, 1)), 100)}},
			key: "old", policy: StrictFIFO,
			outcome: Wait, reason: Queued, ahead: []string{"urgent"}, free: 1,
		},
		{
			name: "a negative priority comes after no priority, whatever its age",
			snap: Snapshot{Nodes: []Node{gpuNode("n1", 2, h100)},
				Workspaces: []Workspace{prioritised(waiting("batch", 0, req(h100, 2, 1)), -10), waiting("notebook", 9, req(h100, 2, 1))}},
			key: "batch", policy: StrictFIFO,
			outcome: Wait, reason: Insufficient, free: 0, // the notebook took the node first
		},
		{
			name: "a request waiting for quota holds no place",
			snap: Snapshot{Nodes: []Node{gpuNode("n1", 2, h100)},
				Workspaces: []Workspace{func() Workspace { w := waiting("old", 0, req(h100, 2, 1)); w.QuotaBlocked = true; return w }(),
					waiting("young", 1, req(h100, 2, 1))}},
			key: "young", policy: StrictFIFO,
			outcome: Admit, reason: Fits, placement: []Slot{{"n1", 2}}, free: 2,
		},
		{
			name: "a changed request may reuse what its workspace holds",
			snap: Snapshot{Nodes: []Node{gpuNode("n1", 4, h100)}, Pods: []Pod{pod("n1", "a", 2)},
				Workspaces: []Workspace{func() Workspace {
					w := admittedOn("a", 0, req(h100, 2, 1), "n1")
					w.Pending = req(h100, 4, 1)
					return w
				}()}},
			key:     "a",
			outcome: Admit, reason: Fits, placement: []Slot{{"n1", 4}}, free: 4,
		},
		{
			name: "what a changed request's workspace holds is not given to others",
			snap: Snapshot{Nodes: []Node{gpuNode("n1", 4, h100)}, Pods: []Pod{pod("n1", "a", 2)},
				Workspaces: []Workspace{func() Workspace {
					w := admittedOn("a", 0, req(h100, 2, 1), "n1")
					w.Pending = req(h100, 3, 1)
					return w
				}(), waiting("b", 1, req(h100, 2, 1))}},
			key:     "b",
			outcome: Wait, reason: Insufficient, free: 1, // a's 3 reuse its pod's 2 and take 1 more
		},
		{
			name: "a changed request that does not fit keeps what its workspace holds",
			snap: Snapshot{Nodes: []Node{gpuNode("n1", 4, h100)}, Pods: []Pod{pod("n1", "a", 2)},
				Workspaces: []Workspace{func() Workspace {
					w := admittedOn("a", 0, req(h100, 2, 1), "n1")
					w.Pending = req(h100, 3, 2)
					return w
				}(), waiting("b", 1, req(h100, 4, 1))}},
			key:     "b",
			outcome: Wait, reason: Insufficient, free: 2, policy: BestEffortFIFO,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			policy := tc.policy
			if policy == "" {
				policy = StrictFIFO
			}
			d := Decide(tc.snap, tc.key, policy)
			g.Expect(d.Outcome).To(Equal(tc.outcome), "decision %+v", d)
			g.Expect(d.Reason).To(Equal(tc.reason), "decision %+v", d)
			if tc.placement != nil {
				g.Expect(d.Placement).To(Equal(tc.placement))
			}
			if tc.outcome != Fail {
				g.Expect(d.Free).To(Equal(tc.free), "free GPUs")
			}
			g.Expect(d.Ahead).To(Equal(tc.ahead))
		})
	}
}

func TestDecideResolvesTheResource(t *testing.T) {
	g := NewWithT(t)
	amd := Node{Name: "a-amd", Schedulable: true, GPUs: []GPU{{Resource: "amd.com/gpu", Vendor: "AMD", Allocatable: 2}}}
	both := Node{Name: "b-both", Schedulable: true, GPUs: []GPU{
		{Resource: nv, Vendor: "NVIDIA", Allocatable: 1}, {Resource: "amd.com/gpu", Vendor: "AMD", Allocatable: 1}}}
	s := Snapshot{Nodes: []Node{both, amd}, Workspaces: []Workspace{
		waiting("any", 0, req(nil, 1, 1)),
		waiting("nv", 1, &Request{Resource: nv, PerReplica: 1, Replicas: 1}),
	}}
	plan := Plan(s, StrictFIFO)
	g.Expect(plan["any"].Resource).To(Equal("amd.com/gpu"), "the first matching node by name decides")
	g.Expect(plan["any"].Vendor).To(Equal("AMD"))
	g.Expect(plan["any"].Placement).To(Equal([]Slot{{"a-amd", 1}}))
	g.Expect(plan["nv"].Placement).To(Equal([]Slot{{"b-both", 1}}))
}

func TestAdmissionRecoveredWithoutPlacementIsPlacedFirstFit(t *testing.T) {
	g := NewWithT(t)
	// An admission without placement (a workspace another controller
	// deployed) is placed before anything new.
	legacy := waiting("legacy", 5, nil)
	legacy.Admitted = &Admission{Request: Request{Resource: nv, PerReplica: 2, Replicas: 1}}
	s := Snapshot{Nodes: []Node{gpuNode("n1", 2, nil)}, Workspaces: []Workspace{legacy, waiting("new", 0, req(nil, 2, 1))}}
	plan := Plan(s, StrictFIFO)
	g.Expect(plan["legacy"].Outcome).To(Equal(Admit))
	g.Expect(plan["legacy"].Placement).To(Equal([]Slot{{"n1", 2}}))
	g.Expect(plan["new"].Outcome).To(Equal(Wait), "older by creation, but the admission in force comes first")
}

func TestPolicyValidate(t *testing.T) {
	g := NewWithT(t)
	g.Expect(StrictFIFO.Validate()).To(Succeed())
	g.Expect(BestEffortFIFO.Validate()).To(Succeed())
	g.Expect(Policy("LIFO").Validate()).To(MatchError(ContainSubstring(`unknown GPU queueing policy "LIFO"`)))
}
