package standin

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	"github.com/apiaryhq/apiary/internal/gpu"
)

const timeout = 30 * time.Second

// fixture creates a namespace with a valid template "tpl" and a ready credential "cred".
func fixture(t *testing.T, g Gomega) (context.Context, string) {
	t.Helper()
	ctx := context.Background()
	ns := mgmt.NewNamespace(t, "standin")
	g.Expect(CreateWithStatus(ctx, mgmt.Client, NewClusterTemplate(ns, "tpl", true))).To(Succeed())
	g.Expect(CreateWithStatus(ctx, mgmt.Client, NewCredential(ns, "cred", true))).To(Succeed())
	return ctx, ns
}

// condition returns the condition of a ClusterDeployment as it is now, and
// whether the status is of the current generation.
func condition(g Gomega, cd *k0rdentv1beta1.ClusterDeployment, typ string) metav1.Condition {
	got := &k0rdentv1beta1.ClusterDeployment{}
	g.Expect(mgmt.Client.Get(context.Background(), client.ObjectKeyFromObject(cd), got)).To(Succeed())
	g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
	c := meta.FindStatusCondition(got.Status.Conditions, typ)
	g.Expect(c).NotTo(BeNil(), "condition %s", typ)
	return *c
}

// expectCondition waits until a condition has the status, reason and message.
func expectCondition(g Gomega, cd *k0rdentv1beta1.ClusterDeployment, typ string, status metav1.ConditionStatus, reason string, msg types.GomegaMatcher) {
	g.Eventually(func(g Gomega) {
		c := condition(g, cd, typ)
		g.Expect(c.Status).To(Equal(status), "%s: %s", typ, c.Message)
		g.Expect(c.Reason).To(Equal(reason))
		g.Expect(c.Message).To(msg)
	}, timeout).Should(Succeed())
}

func kubeconfigSecret(ctx context.Context, cd *k0rdentv1beta1.ClusterDeployment) (*corev1.Secret, error) {
	s := &corev1.Secret{}
	err := mgmt.Client.Get(ctx, client.ObjectKey{Namespace: cd.Namespace, Name: cd.Name + "-kubeconfig"}, s)
	return s, err
}

func TestReadyClusterPublishesChildKubeconfig(t *testing.T) {
	g := NewWithT(t)
	ctx, ns := fixture(t, g)
	cd := NewClusterDeployment(ns, "ready", "tpl", "cred")
	g.Expect(mgmt.Client.Create(ctx, cd)).To(Succeed())

	expectCondition(g, cd, k0rdentv1beta1.ReadyCondition, metav1.ConditionTrue, k0rdentv1beta1.SucceededReason, Equal(ReadyMessage))
	for _, typ := range []string{k0rdentv1beta1.TemplateReadyCondition, k0rdentv1beta1.CredentialReadyCondition, k0rdentv1beta1.CAPIClusterSummaryCondition} {
		g.Expect(condition(g, cd, typ).Status).To(Equal(metav1.ConditionTrue), typ)
	}
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(cd), cd)).To(Succeed())
	g.Expect(cd.Finalizers).To(ContainElement(k0rdentv1beta1.ClusterDeploymentFinalizer))

	secret, err := kubeconfigSecret(ctx, cd)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(secret.Labels).To(HaveKeyWithValue(ClusterNameLabel, cd.Name))

	// The kubeconfig reaches the child control plane and sees its GPU nodes.
	nodeName := "gpu-" + rand.String(5)
	g.Expect(AddGPUNode(ctx, child.Client, nodeName, map[string]string{gpu.ModelLabel: "H100"}, gpu.ResourceNVIDIA, 4)).To(Succeed())
	t.Cleanup(func() { _ = child.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}) })
	cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[k0rdentv1beta1.KubeconfigSecretKey])
	g.Expect(err).NotTo(HaveOccurred())
	childClient, err := client.New(cfg, client.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	nodes := &corev1.NodeList{}
	g.Expect(childClient.List(ctx, nodes)).To(Succeed())
	var mine []corev1.Node
	for _, n := range nodes.Items {
		if n.Name == nodeName {
			mine = append(mine, n)
		}
	}
	g.Expect(mine).To(HaveLen(1))
	g.Expect(gpu.Schedulable(&mine[0])).To(BeTrue())
	offerings := gpu.DeriveOfferings(mine, gpu.DefaultOptions())
	g.Expect(offerings).To(HaveLen(1))
	g.Expect(offerings[0].Model).To(Equal("H100"))
	g.Expect(offerings[0].Total).To(BeEquivalentTo(4))
}

func TestMissingTemplateThenCreated(t *testing.T) {
	g := NewWithT(t)
	ctx, ns := fixture(t, g)
	cd := NewClusterDeployment(ns, "no-template", "later", "cred")
	g.Expect(mgmt.Client.Create(ctx, cd)).To(Succeed())

	expectCondition(g, cd, k0rdentv1beta1.TemplateReadyCondition, metav1.ConditionFalse, k0rdentv1beta1.FailedReason,
		Equal("ClusterTemplate "+ns+"/later not found"))
	expectCondition(g, cd, k0rdentv1beta1.ReadyCondition, metav1.ConditionFalse, k0rdentv1beta1.FailedReason,
		Equal("ClusterTemplate "+ns+"/later not found"))
	_, err := kubeconfigSecret(ctx, cd)
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "kubeconfig Secret of an invalid cluster: %v", err)

	// Creating the template is noticed without touching the ClusterDeployment.
	g.Expect(CreateWithStatus(ctx, mgmt.Client, NewClusterTemplate(ns, "later", true))).To(Succeed())
	expectCondition(g, cd, k0rdentv1beta1.ReadyCondition, metav1.ConditionTrue, k0rdentv1beta1.SucceededReason, Equal(ReadyMessage))
}

func TestInvalidReferences(t *testing.T) {
	g := NewWithT(t)
	ctx, ns := fixture(t, g)
	g.Expect(CreateWithStatus(ctx, mgmt.Client, NewClusterTemplate(ns, "bad-tpl", false))).To(Succeed())
	g.Expect(CreateWithStatus(ctx, mgmt.Client, NewCredential(ns, "bad-cred", false))).To(Succeed())

	for _, tt := range []struct {
		name, template, credential, condition string
		message                               string
	}{
		{"invalid-template", "bad-tpl", "cred", k0rdentv1beta1.TemplateReadyCondition, "ClusterTemplate " + ns + "/bad-tpl is not valid"},
		{"unready-credential", "tpl", "bad-cred", k0rdentv1beta1.CredentialReadyCondition, "Credential " + ns + "/bad-cred is not ready"},
		{"missing-credential", "tpl", "nope", k0rdentv1beta1.CredentialReadyCondition, "Credential " + ns + "/nope not found"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			cd := NewClusterDeployment(ns, tt.name, tt.template, tt.credential)
			g.Expect(mgmt.Client.Create(ctx, cd)).To(Succeed())
			expectCondition(g, cd, tt.condition, metav1.ConditionFalse, k0rdentv1beta1.FailedReason, HavePrefix(tt.message))
			expectCondition(g, cd, k0rdentv1beta1.ReadyCondition, metav1.ConditionFalse, k0rdentv1beta1.FailedReason, HavePrefix(tt.message))
			_, err := kubeconfigSecret(ctx, cd)
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "kubeconfig Secret of an invalid cluster: %v", err)
		})
	}

	t.Run("both-invalid-joins-messages", func(t *testing.T) {
		g := NewWithT(t)
		cd := NewClusterDeployment(ns, "both", "bad-tpl", "bad-cred")
		g.Expect(mgmt.Client.Create(ctx, cd)).To(Succeed())
		expectCondition(g, cd, k0rdentv1beta1.ReadyCondition, metav1.ConditionFalse, k0rdentv1beta1.FailedReason,
			And(ContainSubstring("bad-tpl is not valid"), ContainSubstring("bad-cred is not ready")))
	})
}

func TestFailAnnotation(t *testing.T) {
	g := NewWithT(t)
	ctx, ns := fixture(t, g)
	cd := NewClusterDeployment(ns, "failing", "tpl", "cred")
	cd.Annotations = map[string]string{AnnotationFail: "quota exceeded in region x"}
	g.Expect(mgmt.Client.Create(ctx, cd)).To(Succeed())

	expectCondition(g, cd, k0rdentv1beta1.ReadyCondition, metav1.ConditionFalse, k0rdentv1beta1.FailedReason, Equal("quota exceeded in region x"))
	g.Expect(condition(g, cd, k0rdentv1beta1.CAPIClusterSummaryCondition).Status).To(Equal(metav1.ConditionFalse))
	_, err := kubeconfigSecret(ctx, cd)
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "kubeconfig Secret of a failed cluster: %v", err)

	// Removing the annotation lets the cluster provision.
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(cd), cd)).To(Succeed())
	patch := client.MergeFrom(cd.DeepCopy())
	delete(cd.Annotations, AnnotationFail)
	g.Expect(mgmt.Client.Patch(ctx, cd, patch)).To(Succeed())
	expectCondition(g, cd, k0rdentv1beta1.ReadyCondition, metav1.ConditionTrue, k0rdentv1beta1.SucceededReason, Equal(ReadyMessage))
	_, err = kubeconfigSecret(ctx, cd)
	g.Expect(err).NotTo(HaveOccurred())
}

func TestDelayedProvisioning(t *testing.T) {
	g := NewWithT(t)
	ctx, ns := fixture(t, g)
	cd := NewClusterDeployment(ns, "slow", "tpl", "cred")
	cd.Annotations = map[string]string{AnnotationDelay: "3s"}
	g.Expect(mgmt.Client.Create(ctx, cd)).To(Succeed())

	expectCondition(g, cd, k0rdentv1beta1.ReadyCondition, metav1.ConditionFalse, k0rdentv1beta1.ProgressingReason, Equal(MessageProvisioning))
	g.Expect(condition(g, cd, k0rdentv1beta1.CAPIClusterSummaryCondition).Status).To(Equal(metav1.ConditionFalse))
	_, err := kubeconfigSecret(ctx, cd)
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "kubeconfig Secret while provisioning: %v", err)

	expectCondition(g, cd, k0rdentv1beta1.ReadyCondition, metav1.ConditionTrue, k0rdentv1beta1.SucceededReason, Equal(ReadyMessage))
	_, err = kubeconfigSecret(ctx, cd)
	g.Expect(err).NotTo(HaveOccurred())
}

func TestInvalidDelayFails(t *testing.T) {
	g := NewWithT(t)
	ctx, ns := fixture(t, g)
	cd := NewClusterDeployment(ns, "bad-delay", "tpl", "cred")
	cd.Annotations = map[string]string{AnnotationDelay: "soon"}
	g.Expect(mgmt.Client.Create(ctx, cd)).To(Succeed())
	expectCondition(g, cd, k0rdentv1beta1.ReadyCondition, metav1.ConditionFalse, k0rdentv1beta1.FailedReason, ContainSubstring(AnnotationDelay))
}

func TestDeletion(t *testing.T) {
	for _, tt := range []struct {
		name        string
		annotations map[string]string
	}{
		{name: "immediate"},
		{name: "delayed", annotations: map[string]string{AnnotationDelay: "2s"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx, ns := fixture(t, g)
			cd := NewClusterDeployment(ns, "doomed", "tpl", "cred")
			cd.Annotations = tt.annotations
			g.Expect(mgmt.Client.Create(ctx, cd)).To(Succeed())
			expectCondition(g, cd, k0rdentv1beta1.ReadyCondition, metav1.ConditionTrue, k0rdentv1beta1.SucceededReason, Equal(ReadyMessage))
			_, err := kubeconfigSecret(ctx, cd)
			g.Expect(err).NotTo(HaveOccurred())

			g.Expect(mgmt.Client.Delete(ctx, cd)).To(Succeed())
			if tt.annotations != nil {
				// The caller can see the deletion in progress.
				expectCondition(g, cd, k0rdentv1beta1.ReadyCondition, metav1.ConditionFalse, k0rdentv1beta1.DeletingReason, Not(BeEmpty()))
				g.Expect(condition(g, cd, k0rdentv1beta1.DeletingCondition).Status).To(Equal(metav1.ConditionTrue))
			}
			g.Eventually(func() bool {
				err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(cd), &k0rdentv1beta1.ClusterDeployment{})
				return apierrors.IsNotFound(err)
			}, timeout).Should(BeTrue(), "the ClusterDeployment is released")
			_, err = kubeconfigSecret(ctx, cd)
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "kubeconfig Secret after deletion: %v", err)
		})
	}
}

func TestKubeconfigOverride(t *testing.T) {
	g := NewWithT(t)
	ctx, ns := fixture(t, g)

	unreachable := NewClusterDeployment(ns, "unreachable", "tpl", "cred")
	running.Route(ns+"/unreachable", UnreachableKubeconfig())
	adopted := NewClusterDeployment(ns, "adopted", "tpl", "")
	running.Route(ns+"/adopted", []byte(nil))
	t.Cleanup(func() { running.Unroute(ns + "/unreachable"); running.Unroute(ns + "/adopted") })
	g.Expect(mgmt.Client.Create(ctx, unreachable)).To(Succeed())
	g.Expect(mgmt.Client.Create(ctx, adopted)).To(Succeed())

	expectCondition(g, unreachable, k0rdentv1beta1.ReadyCondition, metav1.ConditionTrue, k0rdentv1beta1.SucceededReason, Equal(ReadyMessage))
	secret, err := kubeconfigSecret(ctx, unreachable)
	g.Expect(err).NotTo(HaveOccurred())
	cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[k0rdentv1beta1.KubeconfigSecretKey])
	g.Expect(err).NotTo(HaveOccurred())
	cfg.Timeout = 5 * time.Second
	c, err := client.New(cfg, client.Options{})
	if err == nil {
		err = c.List(ctx, &corev1.NodeList{})
	}
	g.Expect(err).To(HaveOccurred(), "the unreachable cluster answered")

	// A cluster without kubeconfig (and without credential) is ready but has no Secret.
	expectCondition(g, adopted, k0rdentv1beta1.ReadyCondition, metav1.ConditionTrue, k0rdentv1beta1.SucceededReason, Equal(ReadyMessage))
	g.Expect(meta.FindStatusCondition(mustGet(g, adopted).Status.Conditions, k0rdentv1beta1.CredentialReadyCondition)).To(BeNil())
	_, err = kubeconfigSecret(ctx, adopted)
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "kubeconfig Secret of a cluster without kubeconfig: %v", err)
}

func mustGet(g Gomega, cd *k0rdentv1beta1.ClusterDeployment) *k0rdentv1beta1.ClusterDeployment {
	got := &k0rdentv1beta1.ClusterDeployment{}
	g.Expect(mgmt.Client.Get(context.Background(), client.ObjectKeyFromObject(cd), got)).To(Succeed())
	return got
}
