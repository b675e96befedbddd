package workspace_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/controllertest"
	"github.com/apiaryhq/apiary/test/standin"
)

func gpuWorkspace(ns, name, class, cluster, model string, count int32) *workspacesv1.WorkspaceDeployment {
	w := controllertest.NewWorkspace(ns, name, class, cluster)
	w.Spec.Resources = &workspacesv1.WorkspaceResourceSpec{PerReplica: &workspacesv1.PerReplicaResources{
		GPUCount: ptr.To(count), GPUType: ptr.To(model)}}
	return w
}

func TestWorkspaceGPUOfferingAbsentFails(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "nogpu")
	controllertest.ReadyCluster(t, ns, "c1")
	controllertest.ServiceTemplate(t, ns, "tmpl", nil)
	controllertest.WorkspaceClass(t, "g-"+ns, ns, "tmpl", nil)
	wsd := gpuWorkspace(ns, "dreamer", "g-"+ns, "c1", "B300-"+ns, 1)
	g.Expect(controllertest.Env.Client.Create(ctx, wsd)).To(Succeed())
	w := controllertest.EventuallyPhase(t, client.ObjectKeyFromObject(wsd), workspacesv1.PhaseFailed)
	c := controllertest.Condition(w, workspacesv1.GPUCapacityCondition)
	g.Expect(c.Reason).To(Equal(workspacesv1.GPUOfferingUnavailableReason))
	g.Expect(c.Message).To(ContainSubstring("B300-" + ns))
	err := controllertest.Env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "wsd-c1-dreamer"}, &k0rdentv1beta1.ServiceSet{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no ServiceSet for a workspace that cannot be placed")
}

// TestWorkspaceGPUExhaustedWaitsFirstComeFirstServed fills a 2-GPU node with
// one workspace; two more wait, and when the first goes the older waiter
// runs while the younger keeps waiting.
func TestWorkspaceGPUExhaustedWaitsFirstComeFirstServed(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "fcfs")
	controllertest.ReadyCluster(t, ns, "c1")
	controllertest.ServiceTemplate(t, ns, "tmpl", nil)
	controllertest.WorkspaceClass(t, "g-"+ns, ns, "tmpl", nil)
	model := "A100-" + ns
	g.Expect(standin.AddGPUNode(ctx, controllertest.ChildClient, ns+"-a100", map[string]string{"exalsius.ai/gpu-model": model}, "nvidia.com/gpu", 2)).To(Succeed())

	first := gpuWorkspace(ns, "first", "g-"+ns, "c1", model, 2)
	g.Expect(controllertest.Env.Client.Create(ctx, first)).To(Succeed())
	w := controllertest.EventuallyRunning(t, client.ObjectKeyFromObject(first))
	g.Expect(string(*w.Status.ResolvedResources.PerReplica.GPUVendor)).To(Equal("NVIDIA"), "vendor inferred from the nodes")
	vals := releaseValuesEventually(t, "ws-first", w.Status.ServiceEntryName)
	sched := vals["_exalsius"].(map[string]any)["scheduling"].(map[string]any)["nodeSelector"]
	g.Expect(sched).To(HaveKeyWithValue("exalsius.ai/gpu-model", model), "the gated selector is the placed one")

	second := gpuWorkspace(ns, "second", "g-"+ns, "c1", model, 2)
	g.Expect(controllertest.Env.Client.Create(ctx, second)).To(Succeed())
	w = controllertest.EventuallyPhase(t, client.ObjectKeyFromObject(second), workspacesv1.PhaseWaiting)
	g.Expect(w.Status.Feasibility).NotTo(BeNil())
	g.Expect(w.Status.Feasibility.Available.GPUCount).To(BeZero(), "none free")
	time.Sleep(1100 * time.Millisecond) // a later creation timestamp
	third := gpuWorkspace(ns, "third", "g-"+ns, "c1", model, 2)
	g.Expect(controllertest.Env.Client.Create(ctx, third)).To(Succeed())
	controllertest.EventuallyPhase(t, client.ObjectKeyFromObject(third), workspacesv1.PhaseWaiting)
	err := controllertest.Env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "wsd-c1-second"}, &k0rdentv1beta1.ServiceSet{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a waiting workspace has no release")

	g.Expect(controllertest.Env.Client.Delete(ctx, first)).To(Succeed())
	controllertest.EventuallyRunning(t, client.ObjectKeyFromObject(second))
	g.Consistently(func(g Gomega) {
		g.Expect(controllertest.GetWorkspace(g, client.ObjectKeyFromObject(third)).Status.Phase).To(Equal(workspacesv1.PhaseWaiting))
	}, 2*time.Second, 200*time.Millisecond).Should(Succeed(), "the younger waiter keeps waiting")
}

func releaseValuesEventually(t *testing.T, namespace, release string) map[string]any {
	t.Helper()
	var out map[string]any
	NewWithT(t).Eventually(func(g Gomega) { out = controllertest.ReleaseValues(g, namespace, release) }, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
	return out
}

func TestWorkspacePrerequisiteSharedAndInstalledOnce(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "prereq")
	controllertest.ReadyCluster(t, ns, "c1")
	controllertest.ServiceTemplate(t, ns, "tmpl", nil)
	controllertest.ServiceTemplate(t, ns, "cert-manager-1-16", map[string]string{"standin.apiary.dev/chart": "prerequisite", "standin.apiary.dev/delay": "2s"})
	controllertest.WorkspaceClass(t, "p-"+ns, ns, "tmpl", func(c *workspacesv1.WorkspaceClass) {
		c.Spec.Prerequisites = []workspacesv1.PrerequisiteSpec{{
			ServiceTemplate: workspacesv1.ServiceTemplateRef{Name: "cert-manager-1-16", Namespace: ns},
			Namespace:       "cert-manager",
		}}
	})
	a := controllertest.NewWorkspace(ns, "alpha", "p-"+ns, "c1")
	b := controllertest.NewWorkspace(ns, "beta", "p-"+ns, "c1")
	g.Expect(controllertest.Env.Client.Create(ctx, a)).To(Succeed())
	g.Expect(controllertest.Env.Client.Create(ctx, b)).To(Succeed())
	w := controllertest.EventuallyPhase(t, client.ObjectKeyFromObject(a), workspacesv1.PhaseInstallingPrerequisites)
	g.Expect(w.Status.Prerequisites).To(ContainElement(HaveField("Phase", workspacesv1.PrerequisiteInstalling)))
	controllertest.EventuallyRunning(t, client.ObjectKeyFromObject(a))
	w = controllertest.EventuallyRunning(t, client.ObjectKeyFromObject(b))
	g.Expect(w.Status.Prerequisites).To(ConsistOf(SatisfyAll(
		HaveField("Name", "cert-manager-1-16"), HaveField("Phase", workspacesv1.PrerequisiteSatisfied),
		HaveField("Source", workspacesv1.PrerequisiteSourceWorkspace), HaveField("Namespace", "cert-manager"))))

	list := &k0rdentv1beta1.ServiceSetList{}
	g.Expect(controllertest.Env.Client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{"workspaces.exalsius.ai/role": "prerequisite"})).To(Succeed())
	g.Expect(list.Items).To(HaveLen(1), "one shared prerequisite ServiceSet per cluster")
	g.Expect(controllertest.Installs(ns, "c1", list.Items[0].Spec.Services[0].Name)).To(Equal(1), "installed once on the child")
}
