package workspace_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/controllertest"
)

// TestWorkspaceQuickStartAsWritten runs examples/quickstart as written: the
// exalsius quick start's Colony and Jupyter class, and its workspace, whose
// password comes from a Secret through valuesFrom.
func TestWorkspaceQuickStartAsWritten(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := "kcm-system"
	g.Expect(client.IgnoreAlreadyExists(controllertest.Env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))).To(Succeed())
	controllertest.K0rdentFixturesOnce(t, ns)
	controllertest.ServiceTemplate(t, ns, "jupyter-notebook-0-3-0", nil)
	colony := &infrav1.Colony{}
	controllertest.ReadExample(t, "examples/quickstart/colony.yaml", colony)
	g.Expect(controllertest.Env.Client.Create(ctx, colony)).To(Succeed())
	class := &workspacesv1.WorkspaceClass{}
	controllertest.ReadExample(t, "examples/quickstart/workspaceclass.yaml", class)
	g.Expect(controllertest.Env.Client.Create(ctx, class)).To(Succeed())
	password := &corev1.Secret{}
	controllertest.ReadExample(t, "examples/quickstart/notebook-password.yaml", password)
	g.Expect(controllertest.Env.Client.Create(ctx, password)).To(Succeed())
	t.Cleanup(func() { _ = controllertest.Env.Client.Delete(context.Background(), password) })
	wsd := &workspacesv1.WorkspaceDeployment{}
	controllertest.ReadExample(t, "examples/quickstart/workspacedeployment.yaml", wsd)
	g.Expect(controllertest.Env.Client.Create(ctx, wsd)).To(Succeed())
	key := client.ObjectKeyFromObject(wsd)

	w := controllertest.EventuallyRunning(t, key)
	g.Expect(w.Status.ServiceEntryName).To(Equal("wsd-quickstart-child-1-my-notebook"))
	g.Expect(controllertest.Condition(w, workspacesv1.HelmReleaseReadyCondition).Status).To(Equal(metav1.ConditionTrue))
	g.Expect(w.Status.ResolvedResources.PerReplica.CPU.Equal(resource.MustParse("2"))).To(BeTrue())
	g.Expect(w.Status.ResolvedResources.PerReplica.Memory.Equal(resource.MustParse("4Gi"))).To(BeTrue())
	g.Expect(*w.Status.ResolvedResources.Replicas).To(BeEquivalentTo(1))

	// The ServiceSet carries the public values; the password reaches the
	// release through a Secret only.
	ss := controllertest.ServiceSetOf(g, w)
	g.Expect(ss.Labels).To(HaveKeyWithValue(k0rdentv1beta1.StateManagementProviderAdapterLabel, k0rdentv1beta1.StateManagementProviderAdapterLabelValue))
	g.Expect(ss.Spec.Cluster).To(Equal("quickstart-child-1"))
	g.Expect(ss.Spec.Provider.Name).To(Equal(k0rdentv1beta1.DefaultStateManagementProviderName))
	g.Expect(ss.Spec.Services).To(HaveLen(1))
	svc := ss.Spec.Services[0]
	g.Expect(svc.Namespace).To(Equal("ws-my-notebook"))
	g.Expect(svc.Template).To(Equal("jupyter-notebook-0-3-0"))
	g.Expect(svc.Values).NotTo(ContainSubstring("change-me-please"))
	g.Expect(svc.Values).To(ContainSubstring(`"_exalsius"`))
	g.Expect(svc.ValuesFrom).To(HaveLen(1))
	secret := &corev1.Secret{}
	g.Expect(controllertest.Env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: svc.ValuesFrom[0].Name}, secret)).To(Succeed())
	g.Expect(string(secret.Data["values.yaml"])).To(ContainSubstring("change-me-please"))

	// The child holds the release in ws-my-notebook, with every value.
	g.Eventually(func(g Gomega) {
		vals := controllertest.ReleaseValues(g, "ws-my-notebook", "wsd-quickstart-child-1-my-notebook")
		g.Expect(vals).To(HaveKeyWithValue("notebookPassword", "change-me-please"))
		g.Expect(vals).To(HaveKey("_exalsius"))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
	ns2 := &corev1.Namespace{}
	g.Expect(controllertest.ChildClient.Get(ctx, client.ObjectKey{Name: "ws-my-notebook"}, ns2)).To(Succeed())
	g.Expect(ns2.Labels).To(HaveKeyWithValue("workspaces.exalsius.ai/workspace", "my-notebook"))

	// Teardown in the quick start's order.
	g.Expect(controllertest.Env.Client.Delete(ctx, wsd)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(controllertest.Env.Client.Get(ctx, key, &workspacesv1.WorkspaceDeployment{}))
	},
		controllertest.Timeout, 200*time.Millisecond).Should(BeTrue())
	g.Expect(controllertest.Env.Client.Delete(ctx, class)).To(Succeed())
	g.Expect(controllertest.Env.Client.Delete(ctx, colony)).To(Succeed())
}

func TestWorkspaceMissingClassThenCreated(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "noclass")
	controllertest.ReadyCluster(t, ns, "c1")
	controllertest.ServiceTemplate(t, ns, "tmpl", nil)
	wsd := controllertest.NewWorkspace(ns, "lonely", "absent-"+ns, "c1")
	g.Expect(controllertest.Env.Client.Create(ctx, wsd)).To(Succeed())
	key := client.ObjectKeyFromObject(wsd)
	w := controllertest.EventuallyPhase(t, key, workspacesv1.PhaseFailed)
	g.Expect(controllertest.Condition(w, workspacesv1.ClassResolvedCondition).Reason).To(Equal(workspacesv1.ClassNotFoundReason))
	g.Expect(controllertest.Condition(w, commonv1.StalledCondition)).NotTo(BeNil())
	g.Expect(w.Status.FailureContext).NotTo(BeNil())
	g.Expect(w.Status.FailureContext.Reason).To(Equal(workspacesv1.ClassNotFoundReason))
	g.Expect(w.Status.FailureContext.RecentEvents).NotTo(BeEmpty())

	controllertest.WorkspaceClass(t, "absent-"+ns, ns, "tmpl", nil)
	w = controllertest.EventuallyRunning(t, key)
	g.Expect(w.Status.FailureContext).To(BeNil(), "recovery clears the failure context")
}

func TestWorkspaceMissingClusterWaits(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "nocluster")
	controllertest.ServiceTemplate(t, ns, "tmpl", nil)
	controllertest.WorkspaceClass(t, "c-"+ns, ns, "tmpl", nil)
	wsd := controllertest.NewWorkspace(ns, "early", "c-"+ns, "later")
	g.Expect(controllertest.Env.Client.Create(ctx, wsd)).To(Succeed())
	key := client.ObjectKeyFromObject(wsd)
	g.Eventually(func(g Gomega) {
		w := controllertest.GetWorkspace(g, key)
		g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhasePending))
		c := controllertest.Condition(w, workspacesv1.ClusterDeploymentResolvedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(workspacesv1.ClusterDeploymentNotFoundReason))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
	controllertest.ReadyCluster(t, ns, "later")
	controllertest.EventuallyRunning(t, key)
}

func TestWorkspaceInvalidClassFails(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "invalid")
	controllertest.ReadyCluster(t, ns, "c1")
	controllertest.WorkspaceClass(t, "broken-"+ns, ns, "no-such-template", nil)
	g.Eventually(func(g Gomega) {
		c := &workspacesv1.WorkspaceClass{}
		g.Expect(controllertest.Env.Client.Get(ctx, client.ObjectKey{Name: "broken-" + ns}, c)).To(Succeed())
		g.Expect(c.Status.ObservedGeneration).To(BeNumerically(">", 0), "%+v %+v", c.Status, c.ObjectMeta)
		g.Expect(c.Status.Valid).To(BeFalse())
		g.Expect(c.Status.ValidationError).To(ContainSubstring("no-such-template not found"))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
	wsd := controllertest.NewWorkspace(ns, "w", "broken-"+ns, "c1")
	g.Expect(controllertest.Env.Client.Create(ctx, wsd)).To(Succeed())
	w := controllertest.EventuallyPhase(t, client.ObjectKeyFromObject(wsd), workspacesv1.PhaseFailed)
	g.Expect(controllertest.Condition(w, workspacesv1.ClassResolvedCondition).Reason).To(Equal(workspacesv1.ClassInvalidReason))
	g.Expect(w.Status.Message).To(ContainSubstring("no-such-template"))
}

func TestWorkspaceSecretValuesNeverInline(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "secrets")
	controllertest.ReadyCluster(t, ns, "c1")
	controllertest.ServiceTemplate(t, ns, "tmpl", nil)
	controllertest.WorkspaceClass(t, "s-"+ns, ns, "tmpl", func(c *workspacesv1.WorkspaceClass) {
		c.Spec.UserFacingConfig = []workspacesv1.UserFacingConfigField{
			{HelmValuePath: "auth.password", DisplayName: "Password", Type: workspacesv1.UserFacingConfigSecret, Required: true},
			{HelmValuePath: "auth.user", DisplayName: "User", Required: true},
		}
	})
	g.Expect(controllertest.Env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tokens", Namespace: ns},
		StringData: map[string]string{"token": "hf_topsecret"}})).To(Succeed())
	wsd := controllertest.NewWorkspace(ns, "vault", "s-"+ns, "c1")
	wsd.Spec.Values = controllertest.RawJSON(`{"auth":{"user":"ada","password":"pa55word"}}`)
	wsd.Spec.ValuesFrom = []workspacesv1.ValuesReference{{Kind: "Secret", Name: "tokens", ValuesKey: "token", TargetPath: "hf.token"}}
	g.Expect(controllertest.Env.Client.Create(ctx, wsd)).To(Succeed())
	w := controllertest.EventuallyRunning(t, client.ObjectKeyFromObject(wsd))

	ss := controllertest.ServiceSetOf(g, w)
	all := ss.Spec.Services[0].Values
	for _, s := range []string{"pa55word", "hf_topsecret"} {
		g.Expect(all).NotTo(ContainSubstring(s), "secret values never appear in the ServiceSet")
	}
	g.Expect(all).To(ContainSubstring("ada"))
	g.Eventually(func(g Gomega) {
		vals := controllertest.ReleaseValues(g, "ws-vault", w.Status.ServiceEntryName)
		g.Expect(vals["auth"]).To(HaveKeyWithValue("password", "pa55word"))
		g.Expect(vals["hf"]).To(HaveKeyWithValue("token", "hf_topsecret"))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())

	// A required value left out stops the workspace with a clear condition.
	bad := controllertest.NewWorkspace(ns, "incomplete", "s-"+ns, "c1")
	bad.Spec.Values = controllertest.RawJSON(`{"auth":{"user":"ada"}}`)
	g.Expect(controllertest.Env.Client.Create(ctx, bad)).To(Succeed())
	w = controllertest.EventuallyPhase(t, client.ObjectKeyFromObject(bad), workspacesv1.PhaseFailed)
	c := controllertest.Condition(w, workspacesv1.ConfigResolvedCondition)
	g.Expect(c.Reason).To(Equal(workspacesv1.RequiredConfigMissingReason))
	g.Expect(c.Message).To(ContainSubstring("auth.password"))
}

func TestWorkspaceInPlaceUpdate(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "update")
	controllertest.ReadyCluster(t, ns, "c1")
	controllertest.ServiceTemplate(t, ns, "tmpl", nil)
	controllertest.WorkspaceClass(t, "u-"+ns, ns, "tmpl", func(c *workspacesv1.WorkspaceClass) {
		c.Spec.DefaultResources.PerReplica = &workspacesv1.PerReplicaResources{CPU: ptr.To(resource.MustParse("1"))}
	})
	wsd := controllertest.NewWorkspace(ns, "grow", "u-"+ns, "c1")
	wsd.Spec.Values = controllertest.RawJSON(`{"greeting":"hello"}`)
	g.Expect(controllertest.Env.Client.Create(ctx, wsd)).To(Succeed())
	key := client.ObjectKeyFromObject(wsd)
	w := controllertest.EventuallyRunning(t, key)

	controllertest.UpdateSpec(g, w, func(w *workspacesv1.WorkspaceDeployment) {
		w.Spec.Values = controllertest.RawJSON(`{"greeting":"bonjour"}`)
		w.Spec.Resources = &workspacesv1.WorkspaceResourceSpec{PerReplica: &workspacesv1.PerReplicaResources{CPU: ptr.To(resource.MustParse("3"))}}
	})
	g.Eventually(func(g Gomega) {
		vals := controllertest.ReleaseValues(g, "ws-grow", w.Status.ServiceEntryName)
		g.Expect(vals).To(HaveKeyWithValue("greeting", "bonjour"))
		res := vals["_exalsius"].(map[string]any)["resources"].(map[string]any)["perReplica"].(map[string]any)
		g.Expect(res).To(HaveKeyWithValue("cpu", "3"))
		got := controllertest.GetWorkspace(g, key)
		g.Expect(got.Status.Phase).To(Equal(workspacesv1.PhaseRunning))
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
}

func TestWorkspaceDeployTimeout(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "timeout")
	controllertest.ReadyCluster(t, ns, "c1")
	controllertest.ServiceTemplate(t, ns, "stuck", map[string]string{"standin.apiary.dev/hang": "true"})
	controllertest.WorkspaceClass(t, "t-"+ns, ns, "stuck", func(c *workspacesv1.WorkspaceClass) {
		c.Spec.DeployTimeout = &metav1.Duration{Duration: 3 * time.Second}
	})
	wsd := controllertest.NewWorkspace(ns, "slow", "t-"+ns, "c1")
	g.Expect(controllertest.Env.Client.Create(ctx, wsd)).To(Succeed())
	w := controllertest.EventuallyPhase(t, client.ObjectKeyFromObject(wsd), workspacesv1.PhaseFailed)
	g.Expect(controllertest.Condition(w, workspacesv1.HelmReleaseReadyCondition).Reason).To(Equal(workspacesv1.DeployTimeoutReason))
	g.Expect(w.Status.FailureContext).NotTo(BeNil())
	g.Expect(w.Status.FailureContext.PhaseWhenFailed).To(Equal(workspacesv1.PhaseDeploying))
	g.Expect(w.Status.FailureContext.ServiceSetStatus).NotTo(BeNil())
	g.Expect(w.Status.FailureContext.ServiceSetStatus.Services).To(ContainElement(HaveField("State", "Provisioning")))
}

func TestWorkspaceReleaseFailure(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "relfail")
	controllertest.ReadyCluster(t, ns, "c1")
	controllertest.ServiceTemplate(t, ns, "bad", map[string]string{"standin.apiary.dev/fail": "image pull backoff"})
	controllertest.WorkspaceClass(t, "f-"+ns, ns, "bad", nil)
	wsd := controllertest.NewWorkspace(ns, "broken", "f-"+ns, "c1")
	g.Expect(controllertest.Env.Client.Create(ctx, wsd)).To(Succeed())
	w := controllertest.EventuallyPhase(t, client.ObjectKeyFromObject(wsd), workspacesv1.PhaseFailed)
	g.Expect(controllertest.Condition(w, workspacesv1.HelmReleaseReadyCondition).Reason).To(Equal(workspacesv1.HelmReleaseFailedReason))
	g.Expect(w.Status.Message).To(ContainSubstring("image pull backoff"))
	g.Expect(controllertest.Condition(w, commonv1.ReadyCondition).Status).To(Equal(metav1.ConditionFalse))
}

func TestWorkspaceDeletionOrderAndSuspend(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "teardown")
	controllertest.ReadyCluster(t, ns, "c1")
	controllertest.ServiceTemplate(t, ns, "tmpl", nil)
	controllertest.WorkspaceClass(t, "d-"+ns, ns, "tmpl", nil)
	wsd := controllertest.NewWorkspace(ns, "ephemeral", "d-"+ns, "c1")
	g.Expect(controllertest.Env.Client.Create(ctx, wsd)).To(Succeed())
	key := client.ObjectKeyFromObject(wsd)
	w := controllertest.EventuallyRunning(t, key)
	ssKey := client.ObjectKeyFromObject(controllertest.ServiceSetOf(g, w))

	// Suspended, the workspace can still be deleted.
	controllertest.UpdateSpec(g, w, func(w *workspacesv1.WorkspaceDeployment) { w.Spec.Suspend = true })
	g.Expect(controllertest.Env.Client.Delete(ctx, w)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(controllertest.Env.Client.Get(ctx, key, &workspacesv1.WorkspaceDeployment{}))
	},
		controllertest.Timeout, 200*time.Millisecond).Should(BeTrue())
	// By then the ServiceSet is gone and the child namespace is being deleted
	// (envtest has no namespace controller to finish it).
	g.Expect(apierrors.IsNotFound(controllertest.Env.Client.Get(ctx, ssKey, &k0rdentv1beta1.ServiceSet{}))).To(BeTrue())
	ns2 := &corev1.Namespace{}
	err := controllertest.ChildClient.Get(ctx, client.ObjectKey{Name: "ws-ephemeral"}, ns2)
	g.Expect(err == nil && !ns2.DeletionTimestamp.IsZero() || apierrors.IsNotFound(err)).To(BeTrue())
}
