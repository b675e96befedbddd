package admission

import (
	"math"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

func TestDemandNeverWrapsOrGoesNegative(t *testing.T) {
	g := NewWithT(t)
	g.Expect(req(nil, 1<<62, 4).Demand()).To(Equal(int64(math.MaxInt64)), "2^62 × 4 wrapped to 0")
	g.Expect(req(nil, math.MaxInt64, math.MaxInt32).Demand()).To(Equal(int64(math.MaxInt64)))
	g.Expect(req(nil, -2, 3).Demand()).To(BeZero())
	g.Expect(req(nil, 2, -3).Demand()).To(BeZero())
	g.Expect(req(nil, 8, 3).Demand()).To(Equal(int64(24)))
}

// Pods that claim more GPUs than int64 holds leave a node no room: what
// they take of it saturates instead of wrapping back to free GPUs.
func TestPodsPastInt64LeaveNoRoom(t *testing.T) {
	g := NewWithT(t)
	snap := Snapshot{
		Nodes: []Node{gpuNode("n1", 8, nil)},
		Pods:  []Pod{pod("n1", "", math.MaxInt64), pod("n1", "", math.MaxInt64)},
		Workspaces: []Workspace{waiting("a/w", 0, req(nil, 1, 1)),
			admittedOn("a/held", -1, req(nil, math.MaxInt64, 2), "n1", "n1")},
	}
	d := Decide(snap, "a/w", StrictFIFO)
	g.Expect(d.Outcome).To(Equal(Wait))
	g.Expect(d.Free).To(BeZero())
}

func TestRequestsPastTheLimitsFail(t *testing.T) {
	g := NewWithT(t)
	nodes := []Node{gpuNode("n1", 1<<40, nil)}
	for _, r := range []*Request{req(nil, 1, 1001), req(nil, 65, 1)} {
		d := Decide(Snapshot{Nodes: nodes, Workspaces: []Workspace{waiting("a/w", 0, r)}}, "a/w", StrictFIFO)
		g.Expect(d.Outcome).To(Equal(Fail), "%+v", r)
		g.Expect(d.Reason).To(Equal(OverLimits))
	}
	d := Decide(Snapshot{Nodes: nodes, Workspaces: []Workspace{waiting("a/w", 0, req(nil, 64, 1000))}}, "a/w", StrictFIFO)
	g.Expect(d.Outcome).To(Equal(Admit), "the limits themselves are accepted")
}

// An admission record the API would refuse (replicas below zero, or past
// any slice a process can hold) neither panics nor sizes the planner.
func TestAdmissionsPastTheLimitsAreBounded(t *testing.T) {
	g := NewWithT(t)
	for _, replicas := range []int32{-1, math.MinInt32, math.MaxInt32} {
		snap := Snapshot{Nodes: []Node{gpuNode("n1", 8, nil)}, Workspaces: []Workspace{admittedOn("a/old", 0, req(nil, 1, replicas))}}
		start := time.Now()
		d := Decide(snap, "a/old", StrictFIFO)
		g.Expect(time.Since(start)).To(BeNumerically("<", time.Second))
		g.Expect(len(d.Reserved)).To(BeNumerically("<=", 1000))
	}
}

// A record's placement is read up to its replicas, never past the bound.
func TestRecordedPlacementIsBounded(t *testing.T) {
	g := NewWithT(t)
	a := &workspacesv1.WorkspaceAdmission{GPUsPerReplica: 1, Replicas: 3,
		Placement: []workspacesv1.GPUPlacement{{Node: "n1", Replicas: math.MaxInt32}, {Node: "n2", Replicas: 2}}}
	g.Expect(Recorded(a).Placement).To(Equal([]Slot{{Node: "n1", GPUs: 1}, {Node: "n1", GPUs: 1}, {Node: "n1", GPUs: 1}}))
	a.Replicas = math.MaxInt32
	g.Expect(Recorded(a).Placement).To(HaveLen(1000))
	a.Replicas, a.Placement = 4, []workspacesv1.GPUPlacement{{Node: "n1", Replicas: -5}, {Node: "n2", Replicas: 2}}
	g.Expect(Recorded(a).Placement).To(Equal([]Slot{{Node: "n2", GPUs: 1}, {Node: "n2", GPUs: 1}}))
}

// A node or pod quantity of a tenant's choosing is counted, never added as
// a quantity: inf.Dec would build 10^100000000 to add "1e100000000".
func TestFeasibleCountsHostileQuantitiesAtOnce(t *testing.T) {
	g := NewWithT(t)
	nodes := []corev1.Node{k8sNode("a", "8", "32Gi", false), k8sNode("huge", "1e100000000", "1e100000000", false)}
	pods := []corev1.Pod{k8sPod("a", "1e30", corev1.PodRunning)}
	done := make(chan Feasibility, 1)
	go func() {
		done <- Feasible(nodes, pods, Totals{CPU: resource.MustParse("1"), Memory: resource.MustParse("1e100000000")}, 1, nil, "")
	}()
	var f Feasibility
	g.Eventually(done, 5*time.Second).Should(Receive(&f))
	g.Expect(f.Available.CPU.IsZero()).To(BeTrue(), "a pod past int64 takes all; a node past int64 adds nothing")
	g.Expect(f.Available.Memory.String()).To(Equal("32Gi"))
	g.Expect(f.Fits).To(BeFalse())
	g.Expect(f.Missing.CPU.String()).To(Equal("1"))
	g.Expect(f.Missing.Memory.Value()).To(Equal(int64(math.MaxInt64-32<<30)), "a demand past int64 counts as the most")
}
