package controller_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
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
	ns := env.NewNamespace(t, "infeasible")
	readyCluster(t, ns, "c1")
	serviceTemplate(t, ns, "tmpl", nil)
	workspaceClass(t, "g-"+ns, ns, "tmpl", nil)
	model := "H100-" + ns
	for _, n := range []string{"-a", "-b"} {
		g.Expect(standin.AddGPUNode(ctx, childClient, ns+n, map[string]string{"exalsius.ai/gpu-model": model}, "nvidia.com/gpu", 8)).To(Succeed())
	}

	big := gpuWorkspace(ns, "big", "g-"+ns, "c1", model, 8)
	big.Spec.Resources.Replicas = ptr.To[int32](3)
	big.Spec.Resources.PerReplica.GPUVendor = ptr.To(workspacesv1.GPUVendorNVIDIA)
	g.Expect(env.Client.Create(ctx, big)).To(Succeed())
	w := eventuallyPhase(t, client.ObjectKeyFromObject(big), workspacesv1.PhaseFailed)
	c := condition(w, workspacesv1.GPUCapacityCondition)
	g.Expect(c.Reason).To(Equal(workspacesv1.GPURequestInfeasibleReason))
	g.Expect(c.Message).To(And(
		ContainSubstring("3 replica(s) of 8 GPU(s)"),
		ContainSubstring(`model "`+model+`" (NVIDIA)`),
		ContainSubstring("at most 2 such replica(s)"),
		ContainSubstring("short by 1 replica(s), 8 GPU(s)")))
	g.Expect(w.Status.FailureContext.Reason).To(Equal(workspacesv1.GPURequestInfeasibleReason))

	time.Sleep(1100 * time.Millisecond) // a later creation timestamp
	small := gpuWorkspace(ns, "small", "g-"+ns, "c1", model, 8)
	g.Expect(env.Client.Create(ctx, small)).To(Succeed())
	eventuallyRunning(t, client.ObjectKeyFromObject(small))

	// A node added does not bring it back by itself (docs/admission.md):
	// it stays Failed until it is reconciled again.
	g.Expect(standin.AddGPUNode(ctx, childClient, ns+"-c", map[string]string{"exalsius.ai/gpu-model": model}, "nvidia.com/gpu", 8)).To(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(getWorkspace(g, client.ObjectKeyFromObject(big)).Status.Phase).To(Equal(workspacesv1.PhaseFailed))
	}, 2*time.Second, 200*time.Millisecond).Should(Succeed())
	// Asked to reconcile, it is decided again on the grown cluster: three
	// nodes hold 3×8, but the younger workspace holds one, so it waits.
	w = getWorkspace(g, client.ObjectKeyFromObject(big))
	w.Annotations = map[string]string{"reconcile.fluxcd.io/requestedAt": "grown"}
	g.Expect(env.Client.Update(ctx, w)).To(Succeed())
	w = eventuallyPhase(t, client.ObjectKeyFromObject(big), workspacesv1.PhaseWaiting)
	g.Expect(condition(w, workspacesv1.GPUCapacityCondition).Reason).To(Equal(workspacesv1.WaitingForGPUCapacityReason))
	// A smaller request fits what is free.
	w.Spec.Resources.Replicas = ptr.To[int32](2)
	g.Expect(env.Client.Update(ctx, w)).To(Succeed())
	eventuallyRunning(t, client.ObjectKeyFromObject(big))
}
