package controller_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/test/standin"
)

func TestWorkspaceClassDeletionWaitsForItsWorkspaces(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "inuse")
	readyCluster(t, ns, "c1")
	serviceTemplate(t, ns, "tmpl", nil)
	class := workspaceClass(t, "held-"+ns, ns, "tmpl", nil)
	wsd := workspace(ns, "holder", class.Name, "c1")
	g.Expect(env.Client.Create(ctx, wsd)).To(Succeed())
	eventuallyRunning(t, client.ObjectKeyFromObject(wsd))

	g.Expect(env.Client.Delete(ctx, class)).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := &workspacesv1.WorkspaceClass{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(class), c)).To(Succeed())
		ready := condition(c, commonv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal(workspacesv1.ClassInUseReason))
		g.Expect(ready.Message).To(ContainSubstring(ns + "/holder"))
	}, timeout, 200*time.Millisecond).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(getWorkspace(g, client.ObjectKeyFromObject(wsd)).Status.Phase).To(Equal(workspacesv1.PhaseRunning))
	}, time.Second, 200*time.Millisecond).Should(Succeed(), "the workspace keeps running on its class")

	g.Expect(env.Client.Delete(ctx, wsd)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(class), &workspacesv1.WorkspaceClass{}))
	}, timeout, 200*time.Millisecond).Should(BeTrue(), "the class goes with its last workspace")
}

// TestWorkspacePrerequisiteFromTheColony counts a service the cluster
// already runs (its own ServiceSet, as kcm makes for a ClusterDeployment's
// serviceSpec) as the prerequisite, and installs nothing more.
func TestWorkspacePrerequisiteFromTheColony(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "colonyprereq")
	readyCluster(t, ns, "c1")
	serviceTemplate(t, ns, "tmpl", nil)
	serviceTemplate(t, ns, "gpu-operator", map[string]string{"standin.apiary.dev/chart": "prerequisite"})
	own := standin.NewServiceSet(ns, "c1", "c1", k0rdentv1beta1.ServiceWithValues{Name: "gpu-operator", Namespace: "gpu-operator", Template: "gpu-operator",
		HelmOptions: &k0rdentv1beta1.ServiceHelmOptions{InstallOptions: rawJSON(`{"createNamespace":true}`)}})
	g.Expect(env.Client.Create(ctx, own)).To(Succeed())
	// The cluster runs the service before the workspace comes; a workspace
	// that came first would install its own.
	g.Eventually(func(g Gomega) {
		cd := &k0rdentv1beta1.ClusterDeployment{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c1"}, cd)).To(Succeed())
		g.Expect(cd.Status.Services).To(ContainElement(SatisfyAll(
			HaveField("Template", "gpu-operator"), HaveField("State", k0rdentv1beta1.ServiceStateDeployed))))
	}, timeout, 200*time.Millisecond).Should(Succeed())
	workspaceClass(t, "cp-"+ns, ns, "tmpl", func(c *workspacesv1.WorkspaceClass) {
		c.Spec.Prerequisites = []workspacesv1.PrerequisiteSpec{{ServiceTemplate: workspacesv1.ServiceTemplateRef{Name: "gpu-operator", Namespace: ns}}}
	})
	wsd := workspace(ns, "rider", "cp-"+ns, "c1")
	g.Expect(env.Client.Create(ctx, wsd)).To(Succeed())
	w := eventuallyRunning(t, client.ObjectKeyFromObject(wsd))
	g.Expect(w.Status.Prerequisites).To(ConsistOf(SatisfyAll(
		HaveField("Source", workspacesv1.PrerequisiteSourceColony), HaveField("Phase", workspacesv1.PrerequisiteSatisfied),
		HaveField("Namespace", "gpu-operator"))))
	list := &k0rdentv1beta1.ServiceSetList{}
	g.Expect(env.Client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{"workspaces.exalsius.ai/role": "prerequisite"})).To(Succeed())
	g.Expect(list.Items).To(BeEmpty(), "no second install of what the cluster already runs")
	g.Expect(condition(w, workspacesv1.PrerequisitesMetCondition).Status).To(Equal(metav1.ConditionTrue))
}

// TestWorkspaceSteadyStateMakesNoRequests pokes a running workspace that has
// a values Secret: the reconcile it triggers reads everything from caches and
// writes nothing.
func TestWorkspaceSteadyStateMakesNoRequests(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "quiet")
	readyCluster(t, ns, "c1")
	serviceTemplate(t, ns, "tmpl", nil)
	workspaceClass(t, "q-"+ns, ns, "tmpl", func(c *workspacesv1.WorkspaceClass) {
		c.Spec.UserFacingConfig = []workspacesv1.UserFacingConfigField{{HelmValuePath: "password", DisplayName: "P", Type: workspacesv1.UserFacingConfigSecret}}
	})
	wsd := workspace(ns, "still", "q-"+ns, "c1")
	wsd.Spec.Values = rawJSON(`{"password":"hush"}`)
	g.Expect(env.Client.Create(ctx, wsd)).To(Succeed())
	w := eventuallyRunning(t, client.ObjectKeyFromObject(wsd))
	time.Sleep(2 * time.Second)

	before := requestsIn(ns)
	ss := serviceSetOf(g, w)
	patch := client.MergeFrom(ss.DeepCopy())
	ss.Labels["poke"] = "1"
	g.Expect(env.Client.Patch(ctx, ss, patch)).To(Succeed())
	g.Consistently(func() int { return requestsIn(ns) - before }, 3*time.Second, 200*time.Millisecond).Should(BeZero(),
		"a reconcile that changes nothing makes no API request")
}
