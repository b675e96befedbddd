package admission

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// record is an admission record of per GPUs for each of replicas on model.
func record(per int64, replicas int32, placement ...workspacesv1.GPUPlacement) *workspacesv1.WorkspaceAdmission {
	return &workspacesv1.WorkspaceAdmission{ResourceName: "nvidia.com/gpu", Selector: map[string]string{"m": "h100"},
		GPUsPerReplica: per, Replicas: replicas, Placement: placement}
}

func TestKeepsAndSameGPUs(t *testing.T) {
	req := func(per int64, replicas int32) *Request {
		return &Request{Selector: map[string]string{"m": "h100"}, Resource: "nvidia.com/gpu", PerReplica: per, Replicas: replicas}
	}
	cases := []struct {
		name        string
		a           *workspacesv1.WorkspaceAdmission
		req         *Request
		keeps, same bool
	}{
		{"the same request", record(2, 2), req(2, 2), true, true},
		{"fewer GPUs per replica", record(2, 2), req(1, 2), true, false},
		{"fewer replicas", record(2, 2), req(2, 1), true, false},
		{"more GPUs per replica", record(2, 2), req(3, 2), false, false},
		{"more replicas", record(2, 2), req(2, 3), false, false},
		{"another selector", record(2, 2), &Request{Selector: map[string]string{"m": "a100"}, Resource: "nvidia.com/gpu", PerReplica: 1, Replicas: 1}, false, false},
		{"another resource", record(2, 2), &Request{Selector: map[string]string{"m": "h100"}, Resource: "amd.com/gpu", PerReplica: 1, Replicas: 1}, false, false},
		{"a request of no resource keeps the record's", record(2, 2), &Request{Selector: map[string]string{"m": "h100"}, PerReplica: 2, Replicas: 2}, true, true},
		{"no GPUs asked: kept, not the same", record(2, 2), nil, true, false},
		{"no GPUs recorded, none asked", record(0, 0), nil, true, true},
		{"no GPUs recorded, some asked", record(0, 0), req(1, 1), false, false},
		{"an empty selector equals none", &workspacesv1.WorkspaceAdmission{ResourceName: "nvidia.com/gpu", Selector: map[string]string{}, GPUsPerReplica: 1, Replicas: 1},
			&Request{Resource: "nvidia.com/gpu", PerReplica: 1, Replicas: 1}, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(Keeps(tc.a, tc.req)).To(Equal(tc.keeps), "Keeps")
			g.Expect(SameGPUs(tc.a, tc.req)).To(Equal(tc.same), "SameGPUs")
		})
	}
}

func TestTrimPlacement(t *testing.T) {
	p := func(node string, n int32) workspacesv1.GPUPlacement {
		return workspacesv1.GPUPlacement{Node: node, Replicas: n}
	}
	cases := []struct {
		name     string
		in       []workspacesv1.GPUPlacement
		replicas int32
		want     []workspacesv1.GPUPlacement
	}{
		{"all kept", []workspacesv1.GPUPlacement{p("a", 2), p("b", 1)}, 3, []workspacesv1.GPUPlacement{p("a", 2), p("b", 1)}},
		{"the first replicas", []workspacesv1.GPUPlacement{p("a", 2), p("b", 1)}, 2, []workspacesv1.GPUPlacement{p("a", 2)}},
		{"a node split", []workspacesv1.GPUPlacement{p("a", 2), p("b", 2)}, 3, []workspacesv1.GPUPlacement{p("a", 2), p("b", 1)}},
		{"none", []workspacesv1.GPUPlacement{p("a", 2)}, 0, nil},
		{"more than placed", []workspacesv1.GPUPlacement{p("a", 1)}, 5, []workspacesv1.GPUPlacement{p("a", 1)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(TrimPlacement(tc.in, tc.replicas)).To(Equal(tc.want))
		})
	}
}

// TestPlacementRecordAndRecordedRoundTrip: slots grouped by node and read
// back give the same slots.
func TestPlacementRecordAndRecordedRoundTrip(t *testing.T) {
	g := NewWithT(t)
	slots := []Slot{{Node: "a", GPUs: 2}, {Node: "a", GPUs: 2}, {Node: "b", GPUs: 2}, {Node: "a", GPUs: 2}}
	rec := record(2, 4, PlacementRecord(slots)...)
	g.Expect(rec.Placement).To(Equal([]workspacesv1.GPUPlacement{{Node: "a", Replicas: 2}, {Node: "b", Replicas: 1}, {Node: "a", Replicas: 1}}))
	back := Recorded(rec)
	g.Expect(back.Placement).To(Equal(slots))
	g.Expect(back.Request).To(Equal(Request{Selector: rec.Selector, Resource: "nvidia.com/gpu", PerReplica: 2, Replicas: 4}))
	g.Expect(Recorded(nil)).To(BeNil())
	g.Expect(Recorded(record(0, 1))).To(BeNil(), "no GPUs")
	g.Expect(Recorded(record(1, 0))).To(BeNil(), "no replicas")
	g.Expect(PlacementMessage(rec)).To(Equal("2 nvidia.com/gpu GPU(s) per replica for 4 replica(s) reserved on a×2, b×1, a×1"))
}

func TestSameCPUAndMemory(t *testing.T) {
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	g := NewWithT(t)
	a := &workspacesv1.WorkspaceAdmission{CPU: q("2"), Memory: q("4Gi")}
	g.Expect(SameCPUAndMemory(a, &workspacesv1.WorkspaceAdmission{CPU: q("2000m"), Memory: q("4096Mi")})).To(BeTrue(), "equal amounts in other units")
	g.Expect(SameCPUAndMemory(a, &workspacesv1.WorkspaceAdmission{CPU: q("3"), Memory: q("4Gi")})).To(BeFalse())
	g.Expect(SameCPUAndMemory(a, &workspacesv1.WorkspaceAdmission{Memory: q("4Gi")})).To(BeFalse(), "CPU dropped")
	g.Expect(SameCPUAndMemory(&workspacesv1.WorkspaceAdmission{}, &workspacesv1.WorkspaceAdmission{})).To(BeTrue())
}
