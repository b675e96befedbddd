package admission_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/admission"
	"github.com/apiaryhq/apiary/test/standin"
)

// admittedOnes returns the names of the workspaces with an admission.
func admittedOnes(g Gomega, ws ...*workspacesv1.WorkspaceDeployment) []string {
	var out []string
	for _, w := range ws {
		if get(g, w).Status.Admission != nil {
			out = append(out, w.Name)
		}
	}
	return out
}

// TestOverlappingSelectorsAdmitOnce: gpuType, a gpuNodeSelector on another
// label of the same node, and gpuCount alone all match one 2-GPU node:
// exactly one of three 2-GPU workspaces is admitted and delivered, the
// others wait, and the next in line takes the node when it frees.
func TestOverlappingSelectorsAdmitOnce(t *testing.T) {
	g := NewWithT(t)
	apiary(t, admission.StrictFIFO, false)
	ns := tenant(t, "overlap", nil)
	cls := class(t, ns)
	gpuNode(t, "overlap-n1", map[string]string{"exalsius.ai/gpu-model": "H100", "pool": "overlap"}, 2)

	byType := workspace(t, ns, "ov-type", cls, gpus{count: 2, model: "H100"})
	eventuallyPhase(t, byType, workspacesv1.PhaseRunning)
	time.Sleep(1100 * time.Millisecond) // later creation timestamps
	bySelector := workspace(t, ns, "ov-selector", cls, gpus{count: 2, selector: map[string]string{"pool": "overlap"}})
	time.Sleep(1100 * time.Millisecond)
	byCount := workspace(t, ns, "ov-count", cls, gpus{count: 2})

	w := eventuallyWaiting(t, bySelector, workspacesv1.GPUCapacityCondition, workspacesv1.WaitingForGPUCapacityReason)
	g.Expect(w.Status.Feasibility).NotTo(BeNil())
	g.Expect(w.Status.Feasibility.Available.GPUCount).To(BeZero(), "none free")
	w = eventuallyWaiting(t, byCount, workspacesv1.GPUCapacityCondition, workspacesv1.WaitingBehindOlderReason)
	g.Expect(w.Status.Message).To(HaveSuffix("`apiary queue` shows its place in the queue"), "the queue's place is read on demand")
	g.Consistently(func(g Gomega) {
		g.Expect(admittedOnes(g, byType, bySelector, byCount)).To(Equal([]string{"ov-type"}))
		g.Expect(serviceSets(g, ns)).To(ConsistOf("wsd-c1-ov-type"))
	}, 2*time.Second, 200*time.Millisecond).Should(Succeed())

	deleteAndWait(t, byType)
	w = eventuallyPhase(t, bySelector, workspacesv1.PhaseRunning)
	g.Expect(w.Status.Admission.Placement).To(Equal([]workspacesv1.GPUPlacement{{Node: "overlap-n1", Replicas: 1}}))
	eventuallyWaiting(t, byCount, workspacesv1.GPUCapacityCondition, workspacesv1.WaitingForGPUCapacityReason)
	g.Consistently(func(g Gomega) {
		g.Expect(admittedOnes(g, bySelector, byCount)).To(Equal([]string{"ov-selector"}))
	}, 2*time.Second, 200*time.Millisecond).Should(Succeed())
}

// TestReplicasPlacedPerNode: two 2-GPU replicas fit two 2-GPU nodes, one
// each; a replica larger than every matching node fails at once, and
// enough free GPUs spread so that no node holds a replica wait as
// fragmented until a node frees.
func TestReplicasPlacedPerNode(t *testing.T) {
	g := NewWithT(t)
	apiary(t, admission.StrictFIFO, false)
	ns := tenant(t, "replicas", nil)
	cls := class(t, ns)
	gpuNode(t, "replicas-n1", map[string]string{"exalsius.ai/gpu-model": "A10"}, 2)
	gpuNode(t, "replicas-n2", map[string]string{"exalsius.ai/gpu-model": "A10"}, 2)

	spread := workspace(t, ns, "spread", cls, gpus{count: 2, replicas: 2, model: "A10"})
	w := eventuallyPhase(t, spread, workspacesv1.PhaseRunning)
	g.Expect(w.Status.Admission.Placement).To(Equal([]workspacesv1.GPUPlacement{{Node: "replicas-n1", Replicas: 1}, {Node: "replicas-n2", Replicas: 1}}))
	g.Expect(w.Status.Admission.GPUsPerReplica).To(Equal(int64(2)))

	tooLarge := workspace(t, ns, "too-large", cls, gpus{count: 3, model: "A10"})
	w = eventuallyPhase(t, tooLarge, workspacesv1.PhaseFailed)
	c := cond(w, workspacesv1.GPUCapacityCondition)
	g.Expect(c.Reason).To(Equal(workspacesv1.GPUReplicaTooLargeReason))
	g.Expect(c.Message).To(ContainSubstring("no node matching model \"A10\" on cluster \"c1\" has more than 2"))
	g.Expect(serviceSets(g, ns)).NotTo(ContainElement("wsd-c1-too-large"))

	deleteAndWait(t, spread)
	// One GPU of each node is taken by something else: 2 free in all, none
	// on one node for a 2-GPU replica.
	p1 := boundPod(t, "other", "replicas-p1", "replicas-n1", 1)
	boundPod(t, "other", "replicas-p2", "replicas-n2", 1)
	frag := workspace(t, ns, "frag", cls, gpus{count: 2, model: "A10"})
	w = eventuallyWaiting(t, frag, workspacesv1.GPUCapacityCondition, workspacesv1.GPUCapacityFragmentedReason)
	g.Expect(w.Status.Feasibility).NotTo(BeNil())
	g.Expect(w.Status.Feasibility.Message).To(ContainSubstring("2 GPU(s) are free in all, but no node has room for one replica"))
	deletePod(t, p1)
	w = eventuallyPhase(t, frag, workspacesv1.PhaseRunning)
	g.Expect(w.Status.Admission.Placement).To(Equal([]workspacesv1.GPUPlacement{{Node: "replicas-n1", Replicas: 1}}))
}

// TestBoundPodsReleaseReservations: once an admitted workspace's pod is
// bound, its reservation is counted by the pod instead; another pod on the
// node (not the workspace's) takes GPUs that were free.
func TestBoundPodsReleaseReservations(t *testing.T) {
	g := NewWithT(t)
	apiary(t, admission.StrictFIFO, false)
	ns := tenant(t, "bound", nil)
	cls := class(t, ns)
	gpuNode(t, "bound-n1", map[string]string{"exalsius.ai/gpu-model": "L4"}, 4)

	first := workspace(t, ns, "bound-first", cls, gpus{count: 2, model: "L4"})
	eventuallyPhase(t, first, workspacesv1.PhaseRunning)
	boundPod(t, "ws-bound-first", "replica-0", "bound-n1", 2) // the scheduler bound its replica
	second := workspace(t, ns, "bound-second", cls, gpus{count: 2, model: "L4"})
	eventuallyPhase(t, second, workspacesv1.PhaseRunning)
	third := workspace(t, ns, "bound-third", cls, gpus{count: 1, model: "L4"})
	w := eventuallyWaiting(t, third, workspacesv1.GPUCapacityCondition, workspacesv1.WaitingForGPUCapacityReason)
	g.Expect(w.Status.Feasibility).NotTo(BeNil())
	g.Expect(w.Status.Feasibility.Available.GPUCount).To(BeZero(), "2 bound to the first, 2 reserved for the second")
}

// TestStrictAndBestEffortFIFO: a 2-GPU request waits for a node with one
// GPU free; a younger 1-GPU request on an overlapping selector waits behind
// it under StrictFIFO and goes ahead under BestEffortFIFO.
func TestStrictAndBestEffortFIFO(t *testing.T) {
	for _, tc := range []struct {
		policy admission.Policy
		young  workspacesv1.WorkspacePhase
	}{{admission.StrictFIFO, workspacesv1.PhaseWaiting}, {admission.BestEffortFIFO, workspacesv1.PhaseRunning}} {
		t.Run(string(tc.policy), func(t *testing.T) {
			g := NewWithT(t)
			apiary(t, tc.policy, false)
			ns := tenant(t, "fifo", nil)
			cls := class(t, ns)
			node := "fifo-" + ns
			gpuNode(t, node, map[string]string{"exalsius.ai/gpu-model": "T4", "pool": ns}, 2)
			boundPod(t, "other", ns, node, 1)
			big := workspace(t, ns, "big-"+ns, cls, gpus{count: 2, model: "T4"})
			eventuallyWaiting(t, big, workspacesv1.GPUCapacityCondition, workspacesv1.WaitingForGPUCapacityReason)
			time.Sleep(1100 * time.Millisecond)
			small := workspace(t, ns, "small-"+ns, cls, gpus{count: 1, selector: map[string]string{"pool": ns}})
			if tc.young == workspacesv1.PhaseWaiting {
				w := eventuallyWaiting(t, small, workspacesv1.GPUCapacityCondition, workspacesv1.WaitingBehindOlderReason)
				g.Expect(w.Status.Message).To(HaveSuffix("`apiary queue` shows its place in the queue"))
				g.Consistently(func(g Gomega) { g.Expect(get(g, small).Status.Admission).To(BeNil()) }, 2*time.Second).Should(Succeed())
			} else {
				eventuallyPhase(t, small, workspacesv1.PhaseRunning)
				g.Expect(get(g, big).Status.Phase).To(Equal(workspacesv1.PhaseWaiting))
			}
		})
	}
}

// TestRestartRecoversAdmissionsFirst: a workspace admitted with no pod
// bound yet keeps its GPUs over a restart of the manager: a workspace
// created while no manager ran, on another selector of the same node, waits.
func TestRestartRecoversAdmissionsFirst(t *testing.T) {
	g := NewWithT(t)
	m := apiary(t, admission.StrictFIFO, false)
	ns := tenant(t, "restart", nil)
	cls := class(t, ns)
	gpuNode(t, "restart-n1", map[string]string{"exalsius.ai/gpu-model": "H200", "pool": "restart"}, 2)
	held := workspace(t, ns, "held", cls, gpus{count: 2, model: "H200"})
	before := eventuallyPhase(t, held, workspacesv1.PhaseRunning).Status.Admission
	g.Expect(before).NotTo(BeNil())

	var late *workspacesv1.WorkspaceDeployment
	m.Restart(func() {
		late = workspace(t, ns, "late", cls, gpus{count: 1, selector: map[string]string{"pool": "restart"}})
	})
	w := eventuallyWaiting(t, late, workspacesv1.GPUCapacityCondition, workspacesv1.WaitingForGPUCapacityReason)
	g.Expect(w.Status.Feasibility).NotTo(BeNil())
	g.Expect(w.Status.Feasibility.Available.GPUCount).To(BeZero(), "none free")
	g.Consistently(func(g Gomega) {
		g.Expect(get(g, late).Status.Admission).To(BeNil())
		g.Expect(get(g, held).Status.Admission).To(Equal(before), "the admission stands as it was")
	}, 2*time.Second, 200*time.Millisecond).Should(Succeed())
}

// TestDeliveredWithoutAdmissionIsAdopted: a workspace that runs but has no
// admission record (delivered by an earlier Apiary, or by the exalsius
// operator) keeps running and keeps its GPUs; a new one waits.
func TestDeliveredWithoutAdmissionIsAdopted(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	m := apiary(t, admission.StrictFIFO, false)
	ns := tenant(t, "adopt", nil)
	cls := class(t, ns)
	gpuNode(t, "adopt-n1", map[string]string{"exalsius.ai/gpu-model": "B200"}, 2)
	old := workspace(t, ns, "old", cls, gpus{count: 2, model: "B200"})
	eventuallyPhase(t, old, workspacesv1.PhaseRunning)
	var newer *workspacesv1.WorkspaceDeployment
	m.Restart(func() {
		// As an earlier Apiary left it: running, delivered, no admission.
		w := get(g, old)
		w.Status.Admission = nil
		g.Expect(env.Client.Status().Update(ctx, w)).To(Succeed())
		newer = workspace(t, ns, "newer", cls, gpus{count: 2, model: "B200"})
	})
	eventuallyWaiting(t, newer, workspacesv1.GPUCapacityCondition, workspacesv1.WaitingForGPUCapacityReason)
	g.Eventually(func(g Gomega) {
		w := get(g, old)
		g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseRunning))
		g.Expect(w.Status.Admission).NotTo(BeNil(), "adopted")
		g.Expect(w.Status.Admission.GPUsPerReplica).To(Equal(int64(2)))
	}, timeout, 200*time.Millisecond).Should(Succeed())
	g.Expect(get(g, newer).Status.Admission).To(BeNil())
}

// TestShrinkingKeepsAdmissionGrowingQueues: a running workspace asking for
// fewer GPUs keeps its place at once; one asking for more than the node has
// left waits with its old admission in force (its release is not touched).
func TestShrinkingKeepsAdmissionGrowingQueues(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	apiary(t, admission.StrictFIFO, false)
	ns := tenant(t, "resize", nil)
	cls := class(t, ns)
	gpuNode(t, "resize-n1", map[string]string{"exalsius.ai/gpu-model": "A40"}, 4)
	ws := workspace(t, ns, "resize", cls, gpus{count: 2, model: "A40"})
	eventuallyPhase(t, ws, workspacesv1.PhaseRunning)
	other := workspace(t, ns, "resize-other", cls, gpus{count: 2, model: "A40"})
	eventuallyPhase(t, other, workspacesv1.PhaseRunning)

	resize := func(count int32) {
		g.Eventually(func() error {
			w := get(g, ws)
			w.Spec.Resources = gpus{count: count, model: "A40"}.resources()
			return env.Client.Update(ctx, w)
		}, timeout).Should(Succeed())
	}
	resize(1)
	g.Eventually(func(g Gomega) {
		w := get(g, ws)
		g.Expect(w.Status.Admission.GPUsPerReplica).To(Equal(int64(1)))
		g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseRunning))
	}, timeout, 200*time.Millisecond).Should(Succeed())
	resize(3)
	w := eventuallyWaiting(t, ws, workspacesv1.GPUCapacityCondition, workspacesv1.WaitingForGPUCapacityReason)
	g.Expect(w.Status.Admission.GPUsPerReplica).To(Equal(int64(1)), "the admission in force stays")
	deleteAndWait(t, other)
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, ws).Status.Admission.GPUsPerReplica).To(Equal(int64(3)))
	}, timeout, 200*time.Millisecond).Should(Succeed())
}

// TestFailedWorkspaceKeepsItsGPUs: a workspace whose release failed keeps
// its reservation (k0rdent may still bring the release up): another one
// for the same GPUs waits until the failed one is deleted.
func TestFailedWorkspaceKeepsItsGPUs(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	apiary(t, admission.StrictFIFO, false)
	ns := tenant(t, "failed", nil)
	g.Expect(standin.CreateWithStatus(ctx, env.Client,
		standin.NewServiceTemplate(ns, "broken", true, map[string]string{standin.AnnotationFail: "image pull failed"}))).To(Succeed())
	broken := &workspacesv1.WorkspaceClass{ObjectMeta: metav1.ObjectMeta{Name: "broken-" + ns}, Spec: workspacesv1.WorkspaceClassSpec{
		DisplayName: "broken", ServiceTemplate: workspacesv1.ServiceTemplateRef{Name: "broken", Namespace: ns}}}
	g.Expect(env.Client.Create(ctx, broken)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), broken) })
	gpuNode(t, "failed-n1", map[string]string{"exalsius.ai/gpu-model": "MI300"}, 2)

	fails := workspace(t, ns, "fails", broken.Name, gpus{count: 2, model: "MI300"})
	w := eventuallyPhase(t, fails, workspacesv1.PhaseFailed)
	g.Expect(cond(w, workspacesv1.HelmReleaseReadyCondition).Reason).To(Equal(workspacesv1.HelmReleaseFailedReason))
	next := workspace(t, ns, "next", class(t, ns), gpus{count: 2, model: "MI300"})
	eventuallyWaiting(t, next, workspacesv1.GPUCapacityCondition, workspacesv1.WaitingForGPUCapacityReason)
	g.Consistently(func(g Gomega) { g.Expect(get(g, next).Status.Admission).To(BeNil()) }, 2*time.Second).Should(Succeed())
	deleteAndWait(t, fails)
	eventuallyPhase(t, next, workspacesv1.PhaseRunning)
}

// TestChangedModelFindsItsOwnResource: a running workspace on an NVIDIA
// model switched to an AMD model (no vendor set) is placed on the AMD
// node, with amd.com/gpu: the vendor found for the old request is not
// pinned on the new one.
func TestChangedModelFindsItsOwnResource(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	apiary(t, admission.StrictFIFO, false)
	ns := tenant(t, "vendor", nil)
	gpuNode(t, "vendor-nv", map[string]string{"exalsius.ai/gpu-model": "L40S"}, 2)
	g.Expect(standin.AddGPUNode(ctx, child.Client, "vendor-amd", map[string]string{"exalsius.ai/gpu-model": "MI250"}, "amd.com/gpu", 2)).To(Succeed())
	t.Cleanup(func() { _ = child.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "vendor-amd"}}) })
	ws := workspace(t, ns, "vendor", class(t, ns), gpus{count: 1, model: "L40S"})
	w := eventuallyPhase(t, ws, workspacesv1.PhaseRunning)
	g.Expect(w.Status.Admission.ResourceName).To(Equal("nvidia.com/gpu"))
	g.Expect(string(*w.Status.ResolvedResources.PerReplica.GPUVendor)).To(Equal("NVIDIA"))

	g.Eventually(func() error {
		w := get(g, ws)
		w.Spec.Resources = gpus{count: 1, model: "MI250"}.resources()
		return env.Client.Update(ctx, w)
	}, timeout).Should(Succeed())
	g.Eventually(func(g Gomega) {
		w := get(g, ws)
		g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseRunning), "message: %s", w.Status.Message)
		g.Expect(w.Status.Admission.ResourceName).To(Equal("amd.com/gpu"))
		g.Expect(w.Status.Admission.Placement).To(Equal([]workspacesv1.GPUPlacement{{Node: "vendor-amd", Replicas: 1}}))
		g.Expect(string(*w.Status.ResolvedResources.PerReplica.GPUVendor)).To(Equal("AMD"))
	}, timeout, 200*time.Millisecond).Should(Succeed())
}
