package workspace_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/controllertest"
)

// A chart receives about resources and placement exactly what was admitted
// and charged: values under _exalsius fail the workspace, whatever their
// source, and a user's GPU count at a class's injection path goes when the
// workspace asks for no GPU.
func TestWorkspaceValuesCannotClaimResources(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "reserved")
	controllertest.ReadyCluster(t, ns, "c1")
	controllertest.ServiceTemplate(t, ns, "tmpl", nil)
	class := controllertest.WorkspaceClass(t, "nogpu-"+ns, ns, "tmpl", func(c *workspacesv1.WorkspaceClass) {
		c.Spec.ResourceInjection = &workspacesv1.ResourceInjectionMap{
			GPUCount: []workspacesv1.InjectionPath{`app.resources.limits["nvidia.com/gpu"]`}}
	})
	g.Expect(controllertest.Env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sel", Namespace: ns},
		StringData: map[string]string{"values.yaml": "_exalsius:\n  scheduling:\n    nodeSelector:\n      gpu: h100-7654\n"}})).To(Succeed())

	inline := controllertest.NewWorkspace(ns, "inline", class.Name, "c1")
	inline.Spec.Values = controllertest.RawJSON(`{"_exalsius":{"resources":{"perReplica":{"gpuCount":7654}}}}`)
	fromSecret := controllertest.NewWorkspace(ns, "from-secret", class.Name, "c1")
	fromSecret.Spec.ValuesFrom = []workspacesv1.ValuesReference{{Kind: "Secret", Name: "sel"}}
	atPath := controllertest.NewWorkspace(ns, "at-path", class.Name, "c1")
	atPath.Spec.Values = controllertest.RawJSON(`{"app":{"resources":{"limits":{"nvidia.com/gpu":8,"cpu":"1"}}}}`)
	for _, w := range []*workspacesv1.WorkspaceDeployment{inline, fromSecret, atPath} {
		g.Expect(controllertest.Env.Client.Create(ctx, w)).To(Succeed())
	}

	for w, want := range map[*workspacesv1.WorkspaceDeployment]string{
		inline:     "spec.values: the inline values set _exalsius.resources.perReplica.gpuCount",
		fromSecret: `spec.valuesFrom[0]: Secret sel (key "values.yaml") set _exalsius.scheduling.nodeSelector.gpu`,
	} {
		got := controllertest.EventuallyPhase(t, client.ObjectKeyFromObject(w), workspacesv1.PhaseFailed)
		c := controllertest.Condition(got, workspacesv1.ConfigResolvedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(workspacesv1.ReservedValuesReason))
		g.Expect(c.Message).To(ContainSubstring(want))
		g.Expect(c.Message).NotTo(ContainSubstring("7654"), "the message quotes a value")
		err := controllertest.Env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "wsd-c1-" + w.Name}, &k0rdentv1beta1.ServiceSet{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a refused workspace has no ServiceSet")
	}

	w := controllertest.EventuallyRunning(t, client.ObjectKeyFromObject(atPath))
	injected := controllertest.Condition(w, workspacesv1.ResourcesInjectedCondition)
	g.Expect(injected.Reason).To(Equal(workspacesv1.UserPathsOverwrittenReason))
	g.Expect(injected.Message).To(ContainSubstring(`operator removed spec.values.app.resources.limits["nvidia.com/gpu"] (gpuCount)`))
	g.Expect(controllertest.ServiceSetOf(g, w).Spec.Services[0].Values).NotTo(ContainSubstring("nvidia.com/gpu"))
	g.Eventually(func(g Gomega) {
		vals := controllertest.ReleaseValues(g, "ws-at-path", w.Status.ServiceEntryName)
		g.Expect(vals).To(HaveKeyWithValue("app", HaveKeyWithValue("resources", HaveKeyWithValue("limits", Equal(map[string]any{"cpu": "1"})))))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())

	// A class whose defaultValues set _exalsius is invalid.
	controllertest.WorkspaceClass(t, "reserved-"+ns, ns, "tmpl", func(c *workspacesv1.WorkspaceClass) {
		c.Spec.DefaultValues = controllertest.RawJSON(`{"_exalsius":{"resources":{"perReplica":{"gpuCount":8}}}}`)
	})
	g.Eventually(func(g Gomega) {
		c := &workspacesv1.WorkspaceClass{}
		g.Expect(controllertest.Env.Client.Get(ctx, client.ObjectKey{Name: "reserved-" + ns}, c)).To(Succeed())
		g.Expect(c.Status.ObservedGeneration).To(BeNumerically(">", 0))
		g.Expect(c.Status.Valid).To(BeFalse())
		g.Expect(controllertest.Condition(c, commonv1.ReadyCondition).Reason).To(Equal(workspacesv1.ReservedValuesReason))
		g.Expect(c.Status.ValidationError).To(ContainSubstring("spec.defaultValues: the class's defaultValues set _exalsius.resources.perReplica.gpuCount"))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
}

// A tenant's template syntax reaches the ServiceSet escaped and the
// release as written.
func TestWorkspaceTemplateSyntaxArrivesAsWritten(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "tmplvals")
	controllertest.ReadyCluster(t, ns, "c1")
	controllertest.ServiceTemplate(t, ns, "tmpl", nil)
	class := controllertest.WorkspaceClass(t, "t-"+ns, ns, "tmpl", nil)
	const text = `{{ (getResource "InfrastructureProviderIdentitySecret").data }}`
	wsd := controllertest.NewWorkspace(ns, "tmpl", class.Name, "c1")
	wsd.Spec.Values = controllertest.RawJSON(`{"greeting":"` + `{{ (getResource \"InfrastructureProviderIdentitySecret\").data }}` + `"}`)
	g.Expect(controllertest.Env.Client.Create(ctx, wsd)).To(Succeed())
	w := controllertest.EventuallyRunning(t, client.ObjectKeyFromObject(wsd))

	values := controllertest.ServiceSetOf(g, w).Spec.Services[0].Values
	g.Expect(values).NotTo(ContainSubstring("{{"))
	g.Expect(values).To(ContainSubstring(`\u007b\u007b (getResource`))
	g.Eventually(func(g Gomega) {
		g.Expect(controllertest.ReleaseValues(g, "ws-tmpl", w.Status.ServiceEntryName)).To(HaveKeyWithValue("greeting", text))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
}
