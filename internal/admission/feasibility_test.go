package admission

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func k8sNode(name string, cpu, mem string, unschedulable bool) corev1.Node {
	n := corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	n.Spec.Unschedulable = unschedulable
	n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi")}
	return n
}

func k8sPod(node, cpu string, phase corev1.PodPhase) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-" + node + cpu, Namespace: "x"}}
	p.Spec.NodeName = node
	p.Status.Phase = phase
	p.Spec.Containers = []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}
	return p
}

func totals(cpu, mem string, gpus int64) Totals {
	t := Totals{GPUs: gpus}
	if cpu != "" {
		t.CPU = resource.MustParse(cpu)
	}
	if mem != "" {
		t.Memory = resource.MustParse(mem)
	}
	return t
}

func TestFeasible(t *testing.T) {
	nodes := []corev1.Node{k8sNode("a", "8", "32Gi", false), k8sNode("b", "8", "32Gi", false), k8sNode("cordoned", "64", "1Ti", true)}
	pods := []corev1.Pod{k8sPod("a", "6", corev1.PodRunning), k8sPod("b", "1", corev1.PodSucceeded), k8sPod("cordoned", "1", corev1.PodRunning)}
	cases := []struct {
		name    string
		demand  Totals
		gpus    *Decision
		fits    bool
		message string
		missing *Totals
	}{
		{name: "fits", demand: totals("4", "16Gi", 0), fits: true, message: "Cluster has capacity for 2 replica(s)"},
		{name: "CPU short: a terminated pod frees its CPU, a cordoned node counts for nothing", demand: totals("12", "", 0),
			message: "Insufficient capacity for 2 replica(s); missing 2 CPU", missing: &Totals{CPU: resource.MustParse("2")}},
		{name: "GPUs admitted", demand: totals("", "", 2), gpus: &Decision{Outcome: Admit, Room: true, Free: 4}, fits: true,
			message: "Cluster has capacity for 2 replica(s)"},
		{name: "GPUs queued behind older requests, with room", demand: totals("", "", 2), gpus: &Decision{Outcome: Wait, Reason: Queued, Room: true, Free: 2},
			fits: true, message: "Cluster has capacity for 2 replica(s)"},
		{name: "GPUs short", demand: totals("", "", 4), gpus: &Decision{Outcome: Wait, Reason: Insufficient, Free: 1},
			message: "Insufficient capacity for 2 replica(s); missing 3 H100 GPU", missing: &Totals{GPUs: 3}},
		{name: "GPUs fragmented", demand: totals("", "", 4), gpus: &Decision{Outcome: Wait, Reason: Fragmented, Free: 4},
			message: "Insufficient capacity for 2 replica(s); 4 GPU(s) are free in all, but no node has room for one replica", missing: &Totals{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			f := Feasible(nodes, pods, tc.demand, 2, tc.gpus, "H100")
			g.Expect(f.Fits).To(Equal(tc.fits))
			g.Expect(f.Message).To(Equal(tc.message))
			g.Expect(f.Available.CPU.String()).To(Equal("10"), "16 CPUs on schedulable nodes, 6 requested by a running pod")
			g.Expect(f.Available.Memory.String()).To(Equal("64Gi"))
			if tc.missing == nil {
				g.Expect(f.Missing).To(BeNil())
			} else {
				g.Expect(f.Missing).NotTo(BeNil())
				g.Expect(f.Missing.CPU.Cmp(tc.missing.CPU)).To(Equal(0))
				g.Expect(f.Missing.GPUs).To(Equal(tc.missing.GPUs))
			}
			if tc.gpus != nil {
				g.Expect(f.Fits).To(Equal(tc.gpus.Room), "GPUs fit exactly when the gate found room")
			}
		})
	}
}
