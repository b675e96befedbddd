package workspace_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/controllertest"
	"github.com/apiaryhq/apiary/test/standin"
)

// TestWorkspacePrerequisiteFromTheColony counts a service the cluster
// already runs (its own ServiceSet, as kcm makes for a ClusterDeployment's
// serviceSpec) as the prerequisite, and installs nothing more.
func TestWorkspacePrerequisiteFromTheColony(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "colonyprereq")
	controllertest.ReadyCluster(t, ns, "c1")
	controllertest.ServiceTemplate(t, ns, "tmpl", nil)
	controllertest.ServiceTemplate(t, ns, "gpu-operator", map[string]string{"standin.apiary.dev/chart": "prerequisite"})
	own := standin.NewServiceSet(ns, "c1", "c1", k0rdentv1beta1.ServiceWithValues{Name: "gpu-operator", Namespace: "gpu-operator", Template: "gpu-operator",
		HelmOptions: &k0rdentv1beta1.ServiceHelmOptions{InstallOptions: controllertest.RawJSON(`{"createNamespace":true}`)}})
	g.Expect(controllertest.Env.Client.Create(ctx, own)).To(Succeed())
	// The cluster runs the service before the workspace comes; a workspace
	// that came first would install its own.
	g.Eventually(func(g Gomega) {
		cd := &k0rdentv1beta1.ClusterDeployment{}
		g.Expect(controllertest.Env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "c1"}, cd)).To(Succeed())
		g.Expect(cd.Status.Services).To(ContainElement(SatisfyAll(
			HaveField("Template", "gpu-operator"), HaveField("State", k0rdentv1beta1.ServiceStateDeployed))))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
	controllertest.WorkspaceClass(t, "cp-"+ns, ns, "tmpl", func(c *workspacesv1.WorkspaceClass) {
		c.Spec.Prerequisites = []workspacesv1.PrerequisiteSpec{{ServiceTemplate: workspacesv1.ServiceTemplateRef{Name: "gpu-operator", Namespace: ns}}}
	})
	wsd := controllertest.NewWorkspace(ns, "rider", "cp-"+ns, "c1")
	g.Expect(controllertest.Env.Client.Create(ctx, wsd)).To(Succeed())
	w := controllertest.EventuallyRunning(t, client.ObjectKeyFromObject(wsd))
	g.Expect(w.Status.Prerequisites).To(ConsistOf(SatisfyAll(
		HaveField("Source", workspacesv1.PrerequisiteSourceColony), HaveField("Phase", workspacesv1.PrerequisiteSatisfied),
		HaveField("Namespace", "gpu-operator"))))
	list := &k0rdentv1beta1.ServiceSetList{}
	g.Expect(controllertest.Env.Client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{"workspaces.exalsius.ai/role": "prerequisite"})).To(Succeed())
	g.Expect(list.Items).To(BeEmpty(), "no second install of what the cluster already runs")
	g.Expect(controllertest.Condition(w, workspacesv1.PrerequisitesMetCondition).Status).To(Equal(metav1.ConditionTrue))
}
