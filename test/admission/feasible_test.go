package admission_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/admission"
)

func feasible(g Gomega, w *workspacesv1.WorkspaceDeployment) (*metav1.Condition, *workspacesv1.FeasibilityStatus) {
	got := get(g, w)
	c := cond(got, workspacesv1.FeasibleCondition)
	g.Expect(c).NotTo(BeNil(), "Feasible is published")
	g.Expect(got.Status.Feasibility).NotTo(BeNil())
	return c, got.Status.Feasibility
}

// TestFeasibleFollowsTheGate: Feasible and status.feasibility say what the
// gate found for GPUs (fits when admitted; missing GPUs when too few are
// free; fragmented; a replica larger than any node) and sum CPU for a
// workspace without GPUs; a waiting workspace whose verdict does not
// change is not written again while pods come and go on its cluster.
func TestFeasibleFollowsTheGate(t *testing.T) {
	g := NewWithT(t)
	apiary(t, admission.StrictFIFO, false)
	ns := tenant(t, "feasible", nil)
	cls := class(t, ns)
	gpuNode(t, "feasible-n1", map[string]string{"exalsius.ai/gpu-model": "GH200"}, 2)
	gpuNode(t, "feasible-n2", map[string]string{"exalsius.ai/gpu-model": "GH200"}, 2)

	fits := workspace(t, ns, "fits", cls, gpus{count: 2, model: "GH200"})
	eventuallyPhase(t, fits, workspacesv1.PhaseRunning)
	g.Eventually(func(g Gomega) {
		c, f := feasible(g, fits)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Reason).To(Equal(workspacesv1.ResourcesAvailableReason))
		g.Expect(f.Fits).To(BeTrue())
		g.Expect(f.Demanded.GPUCount).To(Equal(int32(2)))
		g.Expect(f.Available.GPUCount).To(Equal(int32(4)))
		g.Expect(f.Message).To(Equal("Cluster has capacity for 1 replica(s)"))
	}, timeout, 200*time.Millisecond).Should(Succeed())

	short := workspace(t, ns, "short", cls, gpus{count: 2, replicas: 2, model: "GH200"})
	eventuallyWaiting(t, short, workspacesv1.GPUCapacityCondition, workspacesv1.WaitingForGPUCapacityReason)
	g.Eventually(func(g Gomega) {
		c, f := feasible(g, short)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(workspacesv1.InsufficientResourcesReason))
		g.Expect(f.Missing).NotTo(BeNil())
		g.Expect(f.Missing.GPUCount).To(Equal(int32(2)))
		g.Expect(f.Message).To(Equal("Insufficient capacity for 2 replica(s); missing 2 GH200 GPU"))
	}, timeout, 200*time.Millisecond).Should(Succeed())

	// Pods that come and go, taking CPU but no GPU, change what is
	// available but not the verdict: nothing is written.
	before := get(g, short).ResourceVersion
	for i := range 3 {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cpu-only-%d", i), Namespace: "default"},
			Spec: corev1.PodSpec{NodeName: "feasible-n2", Containers: []corev1.Container{{Name: "c", Image: "busybox",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}}}}
		g.Expect(child.Client.Create(context.Background(), p)).To(Succeed())
		time.Sleep(1100 * time.Millisecond) // a new second for evaluatedAt
		deletePod(t, p)
	}
	g.Consistently(func(g Gomega) { g.Expect(get(g, short).ResourceVersion).To(Equal(before)) }, 2*time.Second, 200*time.Millisecond).
		Should(Succeed(), "no status write while the verdict stands")

	tooLarge := workspace(t, ns, "too-large", cls, gpus{count: 4, model: "GH200"})
	eventuallyPhase(t, tooLarge, workspacesv1.PhaseFailed)
	g.Eventually(func(g Gomega) {
		c, _ := feasible(g, tooLarge)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	}, timeout, 200*time.Millisecond).Should(Succeed())

	cpu := workspace(t, ns, "cpu", cls, gpus{cpu: "1000"})
	eventuallyPhase(t, cpu, workspacesv1.PhaseRunning) // Feasible never gates
	g.Eventually(func(g Gomega) {
		c, f := feasible(g, cpu)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(f.Demanded.CPU.String()).To(Equal("1k"))
		g.Expect(f.Available.CPU).NotTo(BeNil())
		g.Expect(f.Message).To(ContainSubstring("missing"))
		g.Expect(f.Message).To(ContainSubstring("CPU"))
	}, timeout, 200*time.Millisecond).Should(Succeed())
}
