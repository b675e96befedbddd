package colony_test

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
	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	"github.com/apiaryhq/apiary/internal/controller/controllertest"
	"github.com/apiaryhq/apiary/test/standin"
)

func TestColonyDeletionAwaitsClusterDeployments(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "delete")
	controllertest.K0rdentFixtures(t, ns)
	slow := controllertest.ColonyEntry("slow")
	slow.ClusterAnnotations = map[string]string{standin.AnnotationDelay: "3s"}
	colony := createColony(t, ns, "doomed", slow)
	key := client.ObjectKeyFromObject(colony)
	eventuallyReady(t, key)

	g.Expect(controllertest.Env.Client.Delete(ctx, colony)).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := getColony(g, key)
		g.Expect(c.Status.Phase).To(Equal(infrav1.ColonyPhaseDeleting))
		cd := &k0rdentv1beta1.ClusterDeployment{}
		g.Expect(controllertest.Env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "doomed-slow"}, cd)).To(Succeed())
		g.Expect(cd.DeletionTimestamp.IsZero()).To(BeFalse(), "the ClusterDeployment is being deleted")
	}, controllertest.Timeout, 100*time.Millisecond).Should(Succeed(), "the Colony waits while k0rdent deletes its cluster")

	g.Eventually(func() bool {
		return apierrors.IsNotFound(controllertest.Env.Client.Get(ctx, key, &infrav1.Colony{}))
	}, controllertest.Timeout, 200*time.Millisecond).Should(BeTrue(), "the Colony goes once its clusters are gone")
	g.Expect(apierrors.IsNotFound(controllertest.Env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "doomed-slow"},
		&k0rdentv1beta1.ClusterDeployment{}))).To(BeTrue())
	g.Expect(apierrors.IsNotFound(controllertest.Env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "doomed-kubeconfigs"},
		&corev1.Secret{}))).To(BeTrue(), "the aggregated Secret is removed")
}

func TestColonyUnreachableChildKeepsInventoryAndSaysSo(t *testing.T) {
	g := NewWithT(t)
	ns := controllertest.Env.NewNamespace(t, "unreachable")
	controllertest.K0rdentFixtures(t, ns)
	far := controllertest.ColonyEntry("far")
	far.ClusterAnnotations = map[string]string{controllertest.UnreachableAnnotation: "true"}
	colony := createColony(t, ns, "remote", controllertest.ColonyEntry("near"), far)
	key := client.ObjectKeyFromObject(colony)

	g.Eventually(func(g Gomega) {
		c := getColony(g, key)
		inv := controllertest.Condition(c, infrav1.GPUInventoryReadyCondition)
		g.Expect(inv).NotTo(BeNil())
		g.Expect(inv.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(inv.Reason).To(Equal(infrav1.ScanFailedReason))
		g.Expect(inv.Message).To(ContainSubstring("remote-far"))
		g.Expect(c.Status.GPUInventory).To(HaveKey("remote-near"))
		g.Expect(c.Status.GPUInventory["remote-near"].ScanError).To(BeEmpty())
		g.Expect(c.Status.GPUInventory["remote-far"].ScanError).NotTo(BeEmpty())
		g.Expect(c.Status.ReadyClusters).To(BeEquivalentTo(2), "an unreachable child does not make its cluster unready")
	}, 2*controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
}

func TestColonyInventoryFollowsNodes(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "nodes")
	controllertest.K0rdentFixtures(t, ns)
	colony := createColony(t, ns, "gpus", controllertest.ColonyEntry("c"))
	key := client.ObjectKeyFromObject(colony)
	eventuallyReady(t, key)

	model := "L40S-" + ns
	g.Expect(standin.AddGPUNode(ctx, controllertest.ChildClient, ns+"-l40s", map[string]string{"exalsius.ai/gpu-model": model}, "nvidia.com/gpu", 4)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(getColony(g, key).Status.GPUInventory["gpus-c"].Offerings).To(ContainElement(
			SatisfyAll(HaveField("Model", model), HaveField("Total", BeEquivalentTo(4)))))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed(), "a new node shows without a Colony change")

	node := &corev1.Node{}
	g.Expect(controllertest.ChildClient.Get(ctx, client.ObjectKey{Name: ns + "-l40s"}, node)).To(Succeed())
	node.Spec.Unschedulable = true
	g.Expect(controllertest.ChildClient.Update(ctx, node)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(getColony(g, key).Status.GPUInventory["gpus-c"].Offerings).NotTo(ContainElement(HaveField("Model", model)))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed(), "a cordoned node leaves the inventory")
}

func TestColonySteadyStateWritesNothing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "steady")
	controllertest.K0rdentFixtures(t, ns)
	colony := createColony(t, ns, "calm", controllertest.ColonyEntry("x"), controllertest.ColonyEntry("y"))
	key := client.ObjectKeyFromObject(colony)
	eventuallyReady(t, key)
	// Let the inventory settle, then poke the Colony's watches without changing
	// anything it owns: a label on a ClusterDeployment triggers a reconcile.
	time.Sleep(2 * time.Second)
	before := getColony(g, key).ResourceVersion
	cd := &k0rdentv1beta1.ClusterDeployment{}
	g.Expect(controllertest.Env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "calm-x"}, cd)).To(Succeed())
	// A metadata-only patch: a typed Update would also send the spec.
	patch := client.MergeFrom(cd.DeepCopy())
	cd.Labels["poke"] = "1"
	g.Expect(controllertest.Env.Client.Patch(ctx, cd, patch)).To(Succeed())
	appliedAt := managerTime(cd, "apiary")
	g.Expect(appliedAt).NotTo(BeNil())
	g.Consistently(func(g Gomega) {
		g.Expect(getColony(g, key).ResourceVersion).To(Equal(before), "no status write")
		got := &k0rdentv1beta1.ClusterDeployment{}
		g.Expect(controllertest.Env.Client.Get(ctx, client.ObjectKeyFromObject(cd), got)).To(Succeed())
		// The stand-in may write status; Apiary must not write again.
		g.Expect(managerTime(got, "apiary")).To(Equal(appliedAt), "no re-apply")
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed())
	g.Expect(controllertest.Condition(getColony(g, key), commonv1.ReadyCondition).Status).To(Equal(metav1.ConditionTrue))
}

// managerTime is when a field manager last wrote the object.
func managerTime(o client.Object, manager string) *metav1.Time {
	for _, mf := range o.GetManagedFields() {
		if mf.Manager == manager && mf.Subresource == "" {
			return mf.Time
		}
	}
	return nil
}

// TestColonyReadinessIgnoresTenantWorkspaces: k0rdent counts the services a
// workspace's ServiceSet delivers onto a cluster into the ClusterDeployment's
// ServicesInReadyState and lowers its Ready while they deploy; the Colony
// that made the cluster stays Ready, and Flux's health check on it with it.
func TestColonyReadinessIgnoresTenantWorkspaces(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "colony-tenants")
	controllertest.K0rdentFixtures(t, ns)
	colony := createColony(t, ns, "hive", controllertest.ColonyEntry("gpu"))
	eventuallyReady(t, client.ObjectKeyFromObject(colony))

	controllertest.ServiceTemplate(t, ns, "slow", map[string]string{standin.AnnotationHang: "true"})
	controllertest.WorkspaceClass(t, "colony-tenants-"+ns, ns, "slow", nil)
	w := controllertest.NewWorkspace(ns, "nb", "colony-tenants-"+ns, "hive-gpu")
	since := time.Now()
	g.Expect(controllertest.Env.Client.Create(ctx, w)).To(Succeed())
	t.Cleanup(func() { _ = controllertest.Env.Client.Delete(ctx, w) })

	// The ClusterDeployment reads not ready while the workspace deploys…
	g.Eventually(func(g Gomega) {
		cd := &k0rdentv1beta1.ClusterDeployment{}
		g.Expect(controllertest.Env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "hive-gpu"}, cd)).To(Succeed())
		g.Expect(controllertest.Condition(cd, k0rdentv1beta1.ServicesInReadyStateCondition)).NotTo(BeNil())
		g.Expect(controllertest.Condition(cd, k0rdentv1beta1.ServicesInReadyStateCondition).Status).To(Equal(metav1.ConditionFalse))
		g.Expect(controllertest.Condition(cd, k0rdentv1beta1.ReadyCondition).Status).NotTo(Equal(metav1.ConditionTrue))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
	// …and the Colony stays Ready, with no event saying otherwise.
	g.Consistently(func(g Gomega) {
		c := getColony(g, client.ObjectKeyFromObject(colony))
		g.Expect(c.Status.Phase).To(Equal(infrav1.ColonyPhaseReady))
		g.Expect(c.Status.ReadyClusters).To(BeEquivalentTo(1))
		g.Expect(controllertest.Condition(c, commonv1.ReadyCondition).Status).To(Equal(metav1.ConditionTrue))
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed())
	events := &corev1.EventList{}
	g.Expect(controllertest.Env.Client.List(ctx, events, client.InNamespace(ns))).To(Succeed())
	for _, e := range events.Items {
		recent := e.EventTime.After(since) || e.Series != nil && e.Series.LastObservedTime.After(since)
		g.Expect(recent && e.Reason == infrav1.NotAllClustersReadyReason).To(BeFalse(), "event: %s", e.Message)
	}
}
