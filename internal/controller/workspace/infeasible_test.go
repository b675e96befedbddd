package workspace_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/controllertest"
	"github.com/apiaryhq/apiary/test/standin"
)

// TestWorkspaceGPURequestInfeasibleFailsAndBlocksNoOne: 3 replicas of 8
// NVIDIA GPUs on a cluster of two 8-GPU nodes can never fit. It fails with
// GpuRequestInfeasible, the message naming the shortfall, and a younger
// 1×8 workspace on the same nodes runs under the default StrictFIFO
// instead of waiting behind it.
func TestWorkspaceGPURequestInfeasibleFailsAndBlocksNoOne(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "infeasible")
	controllertest.ReadyCluster(t, ns, "c1")
	controllertest.ServiceTemplate(t, ns, "tmpl", nil)
	controllertest.WorkspaceClass(t, "g-"+ns, ns, "tmpl", nil)
	model := "H100-" + ns
	for _, n := range []string{"-a", "-b"} {
		g.Expect(standin.AddGPUNode(ctx, controllertest.ChildClient, ns+n, map[string]string{"exalsius.ai/gpu-model": model}, "nvidia.com/gpu", 8)).To(Succeed())
	}

	big := gpuWorkspace(ns, "big", "g-"+ns, "c1", model, 8)
	big.Spec.Resources.Replicas = ptr.To[int32](3)
	big.Spec.Resources.PerReplica.GPUVendor = ptr.To(workspacesv1.GPUVendorNVIDIA)
	g.Expect(controllertest.Env.Client.Create(ctx, big)).To(Succeed())
	w := controllertest.EventuallyPhase(t, client.ObjectKeyFromObject(big), workspacesv1.PhaseFailed)
	c := controllertest.Condition(w, workspacesv1.GPUCapacityCondition)
	g.Expect(c.Reason).To(Equal(workspacesv1.GPURequestInfeasibleReason))
	g.Expect(c.Message).To(And(
		ContainSubstring("3 replica(s) of 8 GPU(s)"),
		ContainSubstring(`model "`+model+`" (NVIDIA)`),
		ContainSubstring("at most 2 such replica(s)"),
		ContainSubstring("short by 1 replica(s), 8 GPU(s)")))
	g.Expect(w.Status.FailureContext.Reason).To(Equal(workspacesv1.GPURequestInfeasibleReason))

	time.Sleep(1100 * time.Millisecond) // a later creation timestamp
	small := gpuWorkspace(ns, "small", "g-"+ns, "c1", model, 8)
	g.Expect(controllertest.Env.Client.Create(ctx, small)).To(Succeed())
	controllertest.EventuallyRunning(t, client.ObjectKeyFromObject(small))

	// A node added does not bring it back by itself (docs/admission.md):
	// it stays Failed until it is reconciled again.
	g.Expect(standin.AddGPUNode(ctx, controllertest.ChildClient, ns+"-c", map[string]string{"exalsius.ai/gpu-model": model}, "nvidia.com/gpu", 8)).To(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(controllertest.GetWorkspace(g, client.ObjectKeyFromObject(big)).Status.Phase).To(Equal(workspacesv1.PhaseFailed))
	}, 2*time.Second, 200*time.Millisecond).Should(Succeed())
	// Asked to reconcile, it is decided again on the grown cluster: three
	// nodes hold 3×8, but the younger workspace holds one, so it waits.
	w = controllertest.GetWorkspace(g, client.ObjectKeyFromObject(big))
	w.Annotations = map[string]string{"reconcile.fluxcd.io/requestedAt": "grown"}
	g.Expect(controllertest.Env.Client.Update(ctx, w)).To(Succeed())
	w = controllertest.EventuallyPhase(t, client.ObjectKeyFromObject(big), workspacesv1.PhaseWaiting)
	g.Expect(controllertest.Condition(w, workspacesv1.GPUCapacityCondition).Reason).To(Equal(workspacesv1.WaitingForGPUCapacityReason))
	// A smaller request fits what is free.
	w.Spec.Resources.Replicas = ptr.To[int32](2)
	g.Expect(controllertest.Env.Client.Update(ctx, w)).To(Succeed())
	controllertest.EventuallyRunning(t, client.ObjectKeyFromObject(big))
}
