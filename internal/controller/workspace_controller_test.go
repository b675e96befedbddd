package controller_test

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
)

// TestWorkspaceQuickStartAsWritten runs examples/quickstart as written: the
// exalsius quick start's Colony and Jupyter class, and its workspace, whose
// password comes from a Secret through valuesFrom.
func TestWorkspaceQuickStartAsWritten(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := "kcm-system"
	g.Expect(client.IgnoreAlreadyExists(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))).To(Succeed())
	k0rdentFixturesOnce(t, ns)
	serviceTemplate(t, ns, "jupyter-notebook-0-3-0", nil)
	colony := &infrav1.Colony{}
	readExample(t, "examples/quickstart/colony.yaml", colony)
	g.Expect(env.Client.Create(ctx, colony)).To(Succeed())
	class := &workspacesv1.WorkspaceClass{}
	readExample(t, "examples/quickstart/workspaceclass.yaml", class)
	g.Expect(env.Client.Create(ctx, class)).To(Succeed())
	password := &corev1.Secret{}
	readExample(t, "examples/quickstart/notebook-password.yaml", password)
	g.Expect(env.Client.Create(ctx, password)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), password) })
	wsd := &workspacesv1.WorkspaceDeployment{}
	readExample(t, "examples/quickstart/workspacedeployment.yaml", wsd)
	g.Expect(env.Client.Create(ctx, wsd)).To(Succeed())
	key := client.ObjectKeyFromObject(wsd)

	w := eventuallyRunning(t, key)
	g.Expect(w.Status.ServiceEntryName).To(Equal("wsd-quickstart-child-1-my-notebook"))
	g.Expect(condition(w, workspacesv1.HelmReleaseReadyCondition).Status).To(Equal(metav1.ConditionTrue))
	g.Expect(w.Status.ResolvedResources.PerReplica.CPU.Equal(resource.MustParse("2"))).To(BeTrue())
	g.Expect(w.Status.ResolvedResources.PerReplica.Memory.Equal(resource.MustParse("4Gi"))).To(BeTrue())
	g.Expect(*w.Status.ResolvedResources.Replicas).To(BeEquivalentTo(1))

	// The ServiceSet carries the public values; the password reaches the
	// release through a Secret only.
	ss := serviceSetOf(g, w)
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
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: svc.ValuesFrom[0].Name}, secret)).To(Succeed())
	g.Expect(string(secret.Data["values.yaml"])).To(ContainSubstring("change-me-please"))

	// The child holds the release in ws-my-notebook, with every value.
	g.Eventually(func(g Gomega) {
		vals := releaseValues(g, "ws-my-notebook", "wsd-quickstart-child-1-my-notebook")
		g.Expect(vals).To(HaveKeyWithValue("notebookPassword", "change-me-please"))
		g.Expect(vals).To(HaveKey("_exalsius"))
	}, timeout, 200*time.Millisecond).Should(Succeed())
	ns2 := &corev1.Namespace{}
	g.Expect(childClient.Get(ctx, client.ObjectKey{Name: "ws-my-notebook"}, ns2)).To(Succeed())
	g.Expect(ns2.Labels).To(HaveKeyWithValue("workspaces.exalsius.ai/workspace", "my-notebook"))

	// Teardown in the quick start's order.
	g.Expect(env.Client.Delete(ctx, wsd)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, key, &workspacesv1.WorkspaceDeployment{}))
	},
		timeout, 200*time.Millisecond).Should(BeTrue())
	g.Expect(env.Client.Delete(ctx, class)).To(Succeed())
	g.Expect(env.Client.Delete(ctx, colony)).To(Succeed())
}

func TestWorkspaceMissingClassThenCreated(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "noclass")
	readyCluster(t, ns, "c1")
	serviceTemplate(t, ns, "tmpl", nil)
	wsd := workspace(ns, "lonely", "absent-"+ns, "c1")
	g.Expect(env.Client.Create(ctx, wsd)).To(Succeed())
	key := client.ObjectKeyFromObject(wsd)
	w := eventuallyPhase(t, key, workspacesv1.PhaseFailed)
	g.Expect(condition(w, workspacesv1.ClassResolvedCondition).Reason).To(Equal(workspacesv1.ClassNotFoundReason))
	g.Expect(condition(w, commonv1.StalledCondition)).NotTo(BeNil())
	g.Expect(w.Status.FailureContext).NotTo(BeNil())
	g.Expect(w.Status.FailureContext.Reason).To(Equal(workspacesv1.ClassNotFoundReason))
	g.Expect(w.Status.FailureContext.RecentEvents).NotTo(BeEmpty())

	workspaceClass(t, "absent-"+ns, ns, "tmpl", nil)
	w = eventuallyRunning(t, key)
	g.Expect(w.Status.FailureContext).To(BeNil(), "recovery clears the failure context")
}

func TestWorkspaceMissingClusterWaits(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "nocluster")
	serviceTemplate(t, ns, "tmpl", nil)
	workspaceClass(t, "c-"+ns, ns, "tmpl", nil)
	wsd := workspace(ns, "early", "c-"+ns, "later")
	g.Expect(env.Client.Create(ctx, wsd)).To(Succeed())
	key := client.ObjectKeyFromObject(wsd)
	g.Eventually(func(g Gomega) {
		w := getWorkspace(g, key)
		g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhasePending))
		c := condition(w, workspacesv1.ClusterDeploymentResolvedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(workspacesv1.ClusterDeploymentNotFoundReason))
	}, timeout, 200*time.Millisecond).Should(Succeed())
	readyCluster(t, ns, "later")
	eventuallyRunning(t, key)
}

func TestWorkspaceInvalidClassFails(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "invalid")
	readyCluster(t, ns, "c1")
	workspaceClass(t, "broken-"+ns, ns, "no-such-template", nil)
	g.Eventually(func(g Gomega) {
		c := &workspacesv1.WorkspaceClass{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: "broken-" + ns}, c)).To(Succeed())
		g.Expect(c.Status.ObservedGeneration).To(BeNumerically(">", 0), "%+v %+v", c.Status, c.ObjectMeta)
		g.Expect(c.Status.Valid).To(BeFalse())
		g.Expect(c.Status.ValidationError).To(ContainSubstring("no-such-template not found"))
	}, timeout, 200*time.Millisecond).Should(Succeed())
	wsd := workspace(ns, "w", "broken-"+ns, "c1")
	g.Expect(env.Client.Create(ctx, wsd)).To(Succeed())
	w := eventuallyPhase(t, client.ObjectKeyFromObject(wsd), workspacesv1.PhaseFailed)
	g.Expect(condition(w, workspacesv1.ClassResolvedCondition).Reason).To(Equal(workspacesv1.ClassInvalidReason))
	g.Expect(w.Status.Message).To(ContainSubstring("no-such-template"))
}

func TestWorkspaceSecretValuesNeverInline(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "secrets")
	readyCluster(t, ns, "c1")
	serviceTemplate(t, ns, "tmpl", nil)
	workspaceClass(t, "s-"+ns, ns, "tmpl", func(c *workspacesv1.WorkspaceClass) {
		c.Spec.UserFacingConfig = []workspacesv1.UserFacingConfigField{
			{HelmValuePath: "auth.password", DisplayName: "Password", Type: workspacesv1.UserFacingConfigSecret, Required: true},
			{HelmValuePath: "auth.user", DisplayName: "User", Required: true},
		}
	})
	g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tokens", Namespace: ns},
		StringData: map[string]string{"token": "hf_topsecret"}})).To(Succeed())
	wsd := workspace(ns, "vault", "s-"+ns, "c1")
	wsd.Spec.Values = rawJSON(`{"auth":{"user":"ada","password":"pa55word"}}`)
	wsd.Spec.ValuesFrom = []workspacesv1.ValuesReference{{Kind: "Secret", Name: "tokens", ValuesKey: "token", TargetPath: "hf.token"}}
	g.Expect(env.Client.Create(ctx, wsd)).To(Succeed())
	w := eventuallyRunning(t, client.ObjectKeyFromObject(wsd))

	ss := serviceSetOf(g, w)
	all := ss.Spec.Services[0].Values
	for _, s := range []string{"pa55word", "hf_topsecret"} {
		g.Expect(all).NotTo(ContainSubstring(s), "secret values never appear in the ServiceSet")
	}
	g.Expect(all).To(ContainSubstring("ada"))
	g.Eventually(func(g Gomega) {
		vals := releaseValues(g, "ws-vault", w.Status.ServiceEntryName)
		g.Expect(vals["auth"]).To(HaveKeyWithValue("password", "pa55word"))
		g.Expect(vals["hf"]).To(HaveKeyWithValue("token", "hf_topsecret"))
	}, timeout, 200*time.Millisecond).Should(Succeed())

	// A required value left out stops the workspace with a clear condition.
	bad := workspace(ns, "incomplete", "s-"+ns, "c1")
	bad.Spec.Values = rawJSON(`{"auth":{"user":"ada"}}`)
	g.Expect(env.Client.Create(ctx, bad)).To(Succeed())
	w = eventuallyPhase(t, client.ObjectKeyFromObject(bad), workspacesv1.PhaseFailed)
	c := condition(w, workspacesv1.ConfigResolvedCondition)
	g.Expect(c.Reason).To(Equal(workspacesv1.RequiredConfigMissingReason))
	g.Expect(c.Message).To(ContainSubstring("auth.password"))
}

func TestWorkspaceInPlaceUpdate(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "update")
	readyCluster(t, ns, "c1")
	serviceTemplate(t, ns, "tmpl", nil)
	workspaceClass(t, "u-"+ns, ns, "tmpl", func(c *workspacesv1.WorkspaceClass) {
		c.Spec.DefaultResources.PerReplica = &workspacesv1.PerReplicaResources{CPU: ptr.To(resource.MustParse("1"))}
	})
	wsd := workspace(ns, "grow", "u-"+ns, "c1")
	wsd.Spec.Values = rawJSON(`{"greeting":"hello"}`)
	g.Expect(env.Client.Create(ctx, wsd)).To(Succeed())
	key := client.ObjectKeyFromObject(wsd)
	w := eventuallyRunning(t, key)

	updateSpec(g, w, func(w *workspacesv1.WorkspaceDeployment) {
		w.Spec.Values = rawJSON(`{"greeting":"bonjour"}`)
		w.Spec.Resources = &workspacesv1.WorkspaceResourceSpec{PerReplica: &workspacesv1.PerReplicaResources{CPU: ptr.To(resource.MustParse("3"))}}
	})
	g.Eventually(func(g Gomega) {
		vals := releaseValues(g, "ws-grow", w.Status.ServiceEntryName)
		g.Expect(vals).To(HaveKeyWithValue("greeting", "bonjour"))
		res := vals["_exalsius"].(map[string]any)["resources"].(map[string]any)["perReplica"].(map[string]any)
		g.Expect(res).To(HaveKeyWithValue("cpu", "3"))
		got := getWorkspace(g, key)
		g.Expect(got.Status.Phase).To(Equal(workspacesv1.PhaseRunning))
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
	}, timeout, 200*time.Millisecond).Should(Succeed())
}

func TestWorkspaceDeployTimeout(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "timeout")
	readyCluster(t, ns, "c1")
	serviceTemplate(t, ns, "stuck", map[string]string{"standin.apiary.dev/hang": "true"})
	workspaceClass(t, "t-"+ns, ns, "stuck", func(c *workspacesv1.WorkspaceClass) {
		c.Spec.DeployTimeout = &metav1.Duration{Duration: 3 * time.Second}
	})
	wsd := workspace(ns, "slow", "t-"+ns, "c1")
	g.Expect(env.Client.Create(ctx, wsd)).To(Succeed())
	w := eventuallyPhase(t, client.ObjectKeyFromObject(wsd), workspacesv1.PhaseFailed)
	g.Expect(condition(w, workspacesv1.HelmReleaseReadyCondition).Reason).To(Equal(workspacesv1.DeployTimeoutReason))
	g.Expect(w.Status.FailureContext).NotTo(BeNil())
	g.Expect(w.Status.FailureContext.PhaseWhenFailed).To(Equal(workspacesv1.PhaseDeploying))
	g.Expect(w.Status.FailureContext.ServiceSetStatus).NotTo(BeNil())
	g.Expect(w.Status.FailureContext.ServiceSetStatus.Services).To(ContainElement(HaveField("State", "Provisioning")))
}

func TestWorkspaceReleaseFailure(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "relfail")
	readyCluster(t, ns, "c1")
	serviceTemplate(t, ns, "bad", map[string]string{"standin.apiary.dev/fail": "image pull backoff"})
	workspaceClass(t, "f-"+ns, ns, "bad", nil)
	wsd := workspace(ns, "broken", "f-"+ns, "c1")
	g.Expect(env.Client.Create(ctx, wsd)).To(Succeed())
	w := eventuallyPhase(t, client.ObjectKeyFromObject(wsd), workspacesv1.PhaseFailed)
	g.Expect(condition(w, workspacesv1.HelmReleaseReadyCondition).Reason).To(Equal(workspacesv1.HelmReleaseFailedReason))
	g.Expect(w.Status.Message).To(ContainSubstring("image pull backoff"))
	g.Expect(condition(w, commonv1.ReadyCondition).Status).To(Equal(metav1.ConditionFalse))
}

func TestWorkspaceDeletionOrderAndSuspend(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "teardown")
	readyCluster(t, ns, "c1")
	serviceTemplate(t, ns, "tmpl", nil)
	workspaceClass(t, "d-"+ns, ns, "tmpl", nil)
	wsd := workspace(ns, "ephemeral", "d-"+ns, "c1")
	g.Expect(env.Client.Create(ctx, wsd)).To(Succeed())
	key := client.ObjectKeyFromObject(wsd)
	w := eventuallyRunning(t, key)
	ssKey := client.ObjectKeyFromObject(serviceSetOf(g, w))

	// Suspended, the workspace can still be deleted.
	updateSpec(g, w, func(w *workspacesv1.WorkspaceDeployment) { w.Spec.Suspend = true })
	g.Expect(env.Client.Delete(ctx, w)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, key, &workspacesv1.WorkspaceDeployment{}))
	},
		timeout, 200*time.Millisecond).Should(BeTrue())
	// By then the ServiceSet is gone and the child namespace is being deleted
	// (envtest has no namespace controller to finish it).
	g.Expect(apierrors.IsNotFound(env.Client.Get(ctx, ssKey, &k0rdentv1beta1.ServiceSet{}))).To(BeTrue())
	ns2 := &corev1.Namespace{}
	err := childClient.Get(ctx, client.ObjectKey{Name: "ws-ephemeral"}, ns2)
	g.Expect(err == nil && !ns2.DeletionTimestamp.IsZero() || apierrors.IsNotFound(err)).To(BeTrue())
}
