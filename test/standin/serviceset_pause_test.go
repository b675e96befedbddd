package standin

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
)

// setPaused adds or removes kcm's pause annotation.
func setPaused(g Gomega, ss *k0rdentv1beta1.ServiceSet, paused bool) {
	patchServiceSet(g, ss, func(got *k0rdentv1beta1.ServiceSet) {
		if !paused {
			delete(got.Annotations, k0rdentv1beta1.ServiceSetPausedAnnotation)
			return
		}
		if got.Annotations == nil {
			got.Annotations = map[string]string{}
		}
		got.Annotations[k0rdentv1beta1.ServiceSetPausedAnnotation] = "apiary"
	})
}

// replicas reads the spec.replicas of a Deployment on the child.
func replicas(g Gomega, namespace, name string) int32 {
	d := &appsv1.Deployment{}
	g.Expect(child.Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, d)).To(Succeed())
	return ptr.Deref(d.Spec.Replicas, -1)
}

// claimLive reports whether a PersistentVolumeClaim exists on the child and
// is not being deleted (envtest runs no controller to lift pvc-protection).
func claimLive(g Gomega, namespace, name string) bool {
	pvc := &corev1.PersistentVolumeClaim{}
	err := child.Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, pvc)
	if apierrors.IsNotFound(err) {
		return false
	}
	g.Expect(err).NotTo(HaveOccurred())
	return pvc.DeletionTimestamp.IsZero()
}

// hubServiceSet deploys one service of the hub chart and waits until it is Deployed.
func hubServiceSet(t *testing.T, g Gomega, name string) (*k0rdentv1beta1.ServiceSet, client.ObjectKey, string) {
	t.Helper()
	ctx, ns := fixture(t, g)
	cd := provisioned(t, g, ns, name)
	g.Expect(CreateWithStatus(ctx, mgmt.Client, NewServiceTemplate(ns, "hub", true, map[string]string{AnnotationChart: ChartWorkspaceHub}))).To(Succeed())
	target := child.NewNamespace(t, name)
	ss := NewServiceSet(ns, name, name, service("nb", target, "hub", `{"v":1,"endpoints":[{"name":"http","port":8888}]}`))
	g.Expect(mgmt.Client.Create(ctx, ss)).To(Succeed())
	expectService(g, ss, "nb", k0rdentv1beta1.ServiceStateDeployed, BeEmpty())
	g.Expect(replicas(g, target, "nb")).To(BeEquivalentTo(1))
	g.Expect(claimLive(g, target, "nb")).To(BeTrue(), "the chart claims a volume")
	g.Expect(child.Client.Get(ctx, client.ObjectKey{Namespace: target, Name: "nb-http"}, &corev1.Service{})).To(Succeed())
	g.Expect(releasedValues(g, target, "nb")).To(HaveKeyWithValue("v", 1.0))
	return ss, client.ObjectKeyFromObject(cd), target
}

// A paused ServiceSet runs no Helm action and keeps its status; lifting the
// pause upgrades once to what changed meanwhile.
func TestPausedServiceSetRunsNoHelm(t *testing.T) {
	g := NewWithT(t)
	ctx, ns := fixture(t, g)
	cd := provisioned(t, g, ns, "pause")
	g.Expect(CreateWithStatus(ctx, mgmt.Client, NewServiceTemplate(ns, "ws", true, nil))).To(Succeed())
	target := child.NewNamespace(t, "pause")
	ss := NewServiceSet(ns, "pause", "pause", service("ws", target, "ws", `{"v":1}`))
	g.Expect(mgmt.Client.Create(ctx, ss)).To(Succeed())
	expectService(g, ss, "ws", k0rdentv1beta1.ServiceStateDeployed, BeEmpty())
	cluster := client.ObjectKeyFromObject(cd)

	setPaused(g, ss, true)
	before := getServiceSet(g, ss).Status
	patchServiceSet(g, ss, func(got *k0rdentv1beta1.ServiceSet) { got.Spec.Services[0].Values = `{"v":2}` })
	g.Consistently(func(g Gomega) {
		g.Expect(services.Upgrades(cluster, target, "ws")).To(BeZero())
		g.Expect(releasedValues(g, target, "ws")).To(HaveKeyWithValue("v", 1.0))
		g.Expect(getServiceSet(g, ss).Status).To(Equal(before), "the status stays as last written")
	}, quiet, 250*time.Millisecond).Should(Succeed())

	setPaused(g, ss, false)
	g.Eventually(func(g Gomega) {
		g.Expect(releasedValues(g, target, "ws")).To(HaveKeyWithValue("v", 2.0))
	}, timeout).Should(Succeed())
	expectService(g, ss, "ws", k0rdentv1beta1.ServiceStateDeployed, BeEmpty())
	upgrades := func() int { return services.Upgrades(cluster, target, "ws") }
	g.Eventually(upgrades, timeout).Should(Equal(1))
	g.Consistently(upgrades, quiet, 250*time.Millisecond).Should(Equal(1), "one upgrade")
	g.Expect(services.Installs(cluster, target, "ws")).To(Equal(1))
}

// A hub Deployment scaled to zero by hand stays so while no Helm action
// runs (a pause, a resync, lifting the pause), but an upgrade (any change of
// values) resets it to the chart's one replica: Helm 3 merges three ways.
func TestHubDeploymentScaledByHand(t *testing.T) {
	g := NewWithT(t)
	ss, cluster, target := hubServiceSet(t, g, "scaled")

	setPaused(g, ss, true)
	d := &appsv1.Deployment{}
	g.Expect(child.Client.Get(context.Background(), client.ObjectKey{Namespace: target, Name: "nb"}, d)).To(Succeed())
	d.Spec.Replicas = ptr.To[int32](0)
	g.Expect(child.Client.Update(context.Background(), d)).To(Succeed())
	touch(g, ss, "paused")
	setPaused(g, ss, false)
	touch(g, ss, "unpaused")
	g.Consistently(func(g Gomega) {
		g.Expect(replicas(g, target, "nb")).To(BeZero())
		g.Expect(services.Upgrades(cluster, target, "nb")).To(BeZero())
	}, quiet, 250*time.Millisecond).Should(Succeed())

	patchServiceSet(g, ss, func(got *k0rdentv1beta1.ServiceSet) { got.Spec.Services[0].Values = `{"v":2}` })
	g.Eventually(func(g Gomega) {
		g.Expect(services.Upgrades(cluster, target, "nb")).To(Equal(1))
		g.Expect(replicas(g, target, "nb")).To(BeEquivalentTo(1), "the upgrade resets the replicas")
	}, timeout).Should(Succeed())
	g.Expect(services.Installs(cluster, target, "nb")).To(Equal(1))
}

// A deleted paused ServiceSet keeps kcm's finalizer and its release until
// the pause is lifted; then it is uninstalled, volume claim included.
func TestDeletedPausedServiceSetWaits(t *testing.T) {
	g := NewWithT(t)
	ss, _, target := hubServiceSet(t, g, "delpause")
	setPaused(g, ss, true)
	g.Expect(mgmt.Client.Delete(context.Background(), ss)).To(Succeed())
	g.Consistently(func(g Gomega) {
		got := getServiceSet(g, ss)
		g.Expect(got.DeletionTimestamp.IsZero()).To(BeFalse())
		g.Expect(got.Finalizers).To(ContainElement(k0rdentv1beta1.ServiceSetFinalizer))
		g.Expect(releaseRecords(g, target, "nb")).To(HaveLen(1))
		g.Expect(claimLive(g, target, "nb")).To(BeTrue())
	}, quiet, 250*time.Millisecond).Should(Succeed())

	setPaused(g, ss, false)
	g.Eventually(func() bool {
		return apierrors.IsNotFound(mgmt.Client.Get(context.Background(), client.ObjectKeyFromObject(ss), &k0rdentv1beta1.ServiceSet{}))
	}, timeout).Should(BeTrue(), "the ServiceSet is released")
	g.Expect(releaseRecords(g, target, "nb")).To(BeEmpty())
	g.Expect(claimLive(g, target, "nb")).To(BeFalse(), "the uninstall deletes the claim")
}

// Uninstalling the hub chart deletes its volume claim (the hub's charts do
// not keep it): stopping a workspace must not uninstall it.
func TestHubUninstallDeletesClaim(t *testing.T) {
	g := NewWithT(t)
	ss, _, target := hubServiceSet(t, g, "dropped")
	patchServiceSet(g, ss, func(got *k0rdentv1beta1.ServiceSet) { got.Spec.Services = nil })
	g.Eventually(func(g Gomega) {
		g.Expect(releaseRecords(g, target, "nb")).To(BeEmpty())
		g.Expect(claimLive(g, target, "nb")).To(BeFalse())
	}, timeout).Should(Succeed())
	err := child.Client.Get(context.Background(), client.ObjectKey{Namespace: target, Name: "nb"}, &appsv1.Deployment{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Deployment after uninstall: %v", err)
}
