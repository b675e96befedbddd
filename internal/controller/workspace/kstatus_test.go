package workspace_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/controllertest"
	"github.com/apiaryhq/apiary/test/standin"
)

// TestWorkspaceKstatusPhaseByPhase drives workspaces through every phase
// and checks that each version the controller writes reads, with kstatus
// itself, as Flux and kubectl wait must read it (wantKstatus). A Pending or
// Waiting workspace names its specific reason as its Ready reason, with an
// event; a Failed one carries Stalled=True.
func TestWorkspaceKstatusPhaseByPhase(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "kstatus")
	rec := controllertest.WatchKstatus(t, ns)
	controllertest.ReadyCluster(t, ns, "c1")
	controllertest.ServiceTemplate(t, ns, "slow", map[string]string{standin.AnnotationDelay: "2s"})
	controllertest.ServiceTemplate(t, ns, "prereq", map[string]string{standin.AnnotationChart: "prerequisite", standin.AnnotationDelay: "2s"})
	controllertest.WorkspaceClass(t, "a-"+ns, ns, "slow", nil)
	controllertest.WorkspaceClass(t, "b-"+ns, ns, "slow", func(c *workspacesv1.WorkspaceClass) {
		c.Spec.Prerequisites = []workspacesv1.PrerequisiteSpec{{ServiceTemplate: workspacesv1.ServiceTemplateRef{Name: "prereq", Namespace: ns}}}
	})

	// Pending on a missing valuesFrom Secret, then Deploying and Running.
	wv := controllertest.NewWorkspace(ns, ns+"-values", "a-"+ns, "c1")
	wv.Spec.ValuesFrom = []workspacesv1.ValuesReference{{Kind: "Secret", Name: "later"}}
	g.Expect(controllertest.Env.Client.Create(ctx, wv)).To(Succeed())
	got := controllertest.EventuallyPhase(t, client.ObjectKeyFromObject(wv), workspacesv1.PhasePending)
	g.Eventually(func(g Gomega) {
		got = controllertest.GetWorkspace(g, client.ObjectKeyFromObject(wv))
		g.Expect(controllertest.Condition(got, commonv1.ReadyCondition)).To(HaveField("Reason", workspacesv1.ValuesFromNotFoundReason))
	}, controllertest.Timeout, 100*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) []string { return eventReasons(g, ns, wv.Name) }, controllertest.Timeout, 200*time.Millisecond).
		Should(ContainElement(workspacesv1.ValuesFromNotFoundReason))
	secret := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"name": "later", "namespace": ns}, "stringData": map[string]any{"values.yaml": "greeting: hello\n"}}}
	g.Expect(controllertest.Env.Client.Create(ctx, secret)).To(Succeed())
	controllertest.EventuallyRunning(t, client.ObjectKeyFromObject(wv))
	g.Expect(eventReasons(g, ns, wv.Name)).To(HaveEach(Not(Equal(string(workspacesv1.PhasePending)))), "no event names the bare phase")

	// After a spec change, and after a class change that installs a
	// prerequisite first.
	w := controllertest.GetWorkspace(g, client.ObjectKeyFromObject(wv))
	controllertest.UpdateSpec(g, w, func(w *workspacesv1.WorkspaceDeployment) {
		w.Spec.Values = controllertest.RawJSON(`{"greeting":"bonjour"}`)
	})
	g.Eventually(func(g Gomega) {
		w := controllertest.GetWorkspace(g, client.ObjectKeyFromObject(wv))
		g.Expect(w.Status.ObservedGeneration).To(Equal(w.Generation))
		g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseRunning))
	}, controllertest.Timeout, 100*time.Millisecond).Should(Succeed())
	w = controllertest.GetWorkspace(g, client.ObjectKeyFromObject(wv))
	controllertest.UpdateSpec(g, w, func(w *workspacesv1.WorkspaceDeployment) { w.Spec.WorkspaceClassRef = "b-" + ns })
	g.Eventually(func(g Gomega) {
		w := controllertest.GetWorkspace(g, client.ObjectKeyFromObject(wv))
		g.Expect(w.Status.ObservedGeneration).To(Equal(w.Generation))
		g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseRunning))
	}, controllertest.Timeout, 100*time.Millisecond).Should(Succeed())

	// Waiting for GPUs, and Failed when no node can hold one replica.
	model := "K-" + ns
	g.Expect(standin.AddGPUNode(ctx, controllertest.ChildClient, ns+"-gpu", map[string]string{"exalsius.ai/gpu-model": model}, "nvidia.com/gpu", 1)).To(Succeed())
	holder := gpuWorkspace(ns, ns+"-holder", "a-"+ns, "c1", model, 1)
	g.Expect(controllertest.Env.Client.Create(ctx, holder)).To(Succeed())
	controllertest.EventuallyRunning(t, client.ObjectKeyFromObject(holder))
	waiter := gpuWorkspace(ns, ns+"-waiter", "a-"+ns, "c1", model, 1)
	g.Expect(controllertest.Env.Client.Create(ctx, waiter)).To(Succeed())
	got = controllertest.EventuallyPhase(t, client.ObjectKeyFromObject(waiter), workspacesv1.PhaseWaiting)
	g.Expect(controllertest.Condition(got, commonv1.ReadyCondition)).To(HaveField("Reason", workspacesv1.WaitingForGPUCapacityReason))
	g.Eventually(func(g Gomega) []string { return eventReasons(g, ns, waiter.Name) }, controllertest.Timeout, 200*time.Millisecond).
		Should(ContainElement(workspacesv1.WaitingForGPUCapacityReason))
	big := gpuWorkspace(ns, ns+"-big", "a-"+ns, "c1", model, 2)
	big.Spec.Resources.PerReplica.GPUCount = ptr.To(int32(2))
	g.Expect(controllertest.Env.Client.Create(ctx, big)).To(Succeed())
	got = controllertest.EventuallyPhase(t, client.ObjectKeyFromObject(big), workspacesv1.PhaseFailed)
	g.Expect(controllertest.Condition(got, commonv1.StalledCondition)).To(HaveField("Status", metav1.ConditionTrue), "kubectl wait --for=condition=Stalled")

	// Deleting: the workspace holds its finalizer until its release is gone.
	g.Expect(controllertest.Env.Client.Delete(ctx, holder)).To(Succeed())
	controllertest.EventuallyRunning(t, client.ObjectKeyFromObject(waiter))

	g.Eventually(func(g Gomega) {
		rec.Check(g, "Pending InProgress", "Deploying InProgress", "Running Current", "InstallingPrerequisites InProgress",
			"Waiting InProgress", "Failed Failed", "deleted Terminating", "behind InProgress")
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
}

// eventReasons lists the reasons of the events about a workspace.
func eventReasons(g Gomega, ns, name string) []string {
	list := &eventsv1.EventList{}
	g.Expect(controllertest.Env.Client.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "WorkspaceDeployment" && e.Regarding.Name == name {
			out = append(out, e.Reason)
		}
	}
	return out
}
