package standin

import (
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
)

func TestKCMReleaseValidate(t *testing.T) {
	g := NewWithT(t)
	for _, ok := range []KCMRelease{KCM19, KCM112} {
		g.Expect(ok.Validate()).To(Succeed(), ok.String())
	}
	for _, bad := range []KCMRelease{"v1.10", "1.12", "v1.9"} {
		g.Expect(bad.Validate()).To(HaveOccurred(), string(bad))
	}
}

// servicesReady expects the ServiceSet's ServicesInReadyState condition.
func servicesReady(g Gomega, ss *k0rdentv1beta1.ServiceSet, status metav1.ConditionStatus, msg string) {
	g.Eventually(func(g Gomega) {
		got := getServiceSet(g, ss)
		c := meta.FindStatusCondition(got.Status.Conditions, k0rdentv1beta1.ServiceSetServicesInReadyStateCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(status))
		g.Expect(c.Message).To(Equal(msg))
		g.Expect(c.ObservedGeneration).To(Equal(got.Generation))
	}, timeout).Should(Succeed())
}

// A ServiceSet reported like kcm 1.12 keeps a removed service as Deleted,
// carries lastDeployedHash through a new rollout and counts its services in
// ServicesInReadyState; one reported like kcm 1.9 (the default) does none
// of this.
func TestServiceSetReportsLikeKCM112(t *testing.T) {
	g := NewWithT(t)
	ctx, ns := fixture(t, g)
	cd := provisioned(t, g, ns, "v112")
	target := child.NewNamespace(t, "v112")
	g.Expect(CreateWithStatus(ctx, mgmt.Client, NewServiceTemplate(ns, "quick", true, map[string]string{AnnotationInstant: "true"}))).To(Succeed())
	ss := NewServiceSet(ns, "v112", "v112", service("a", target, "quick", `{"v":1}`), service("b", target, "quick", ""))
	ss.Annotations = map[string]string{AnnotationReportAs: string(KCM112)}
	g.Expect(mgmt.Client.Create(ctx, ss)).To(Succeed())

	expectService(g, ss, "a", k0rdentv1beta1.ServiceStateDeployed, BeEmpty())
	expectService(g, ss, "b", k0rdentv1beta1.ServiceStateDeployed, BeEmpty())
	servicesReady(g, ss, metav1.ConditionTrue, "2/2")
	first := findState(getServiceSet(g, ss).Status.Services, "a", target).LastDeployedHash
	g.Expect(first).To(HaveLen(16))

	// b leaves the spec: it stays, Deleted, and counts no more.
	got := getServiceSet(g, ss)
	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.Services = got.Spec.Services[:1]
	got.Spec.Services[0].Values = `{"v":2}`
	g.Expect(mgmt.Client.Patch(ctx, got, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		st := findState(getServiceSet(g, ss).Status.Services, "b", target)
		g.Expect(st).NotTo(BeNil())
		g.Expect(st.State).To(Equal(k0rdentv1beta1.ServiceStateDeleted))
	}, timeout).Should(Succeed())
	// a deploys its new values under a new hash.
	g.Eventually(func(g Gomega) {
		st := findState(getServiceSet(g, ss).Status.Services, "a", target)
		g.Expect(st.State).To(Equal(k0rdentv1beta1.ServiceStateDeployed))
		g.Expect(st.LastDeployedHash).To(And(HaveLen(16), Not(Equal(first))))
	}, timeout).Should(Succeed())
	servicesReady(g, ss, metav1.ConditionTrue, "1/1")
	expectCondition(g, cd, k0rdentv1beta1.ServicesInReadyStateCondition, metav1.ConditionTrue, k0rdentv1beta1.SucceededReason, Equal("1/1"))

	// Deletion still releases the ServiceSet.
	g.Expect(mgmt.Client.Delete(ctx, ss)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(ss), &k0rdentv1beta1.ServiceSet{}))
	}, timeout).Should(BeTrue())

	// The default reports like kcm 1.9: a removed service leaves the status.
	old := NewServiceSet(ns, "v19", "v112", service("c", target, "quick", ""), service("d", target, "quick", ""))
	g.Expect(mgmt.Client.Create(ctx, old)).To(Succeed())
	expectService(g, old, "d", k0rdentv1beta1.ServiceStateDeployed, BeEmpty())
	got = getServiceSet(g, old)
	patch = client.MergeFrom(got.DeepCopy())
	got.Spec.Services = got.Spec.Services[:1]
	g.Expect(mgmt.Client.Patch(ctx, got, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := getServiceSet(g, old)
		g.Expect(got.Status.Services).To(HaveLen(1))
		g.Expect(got.Status.Services[0].LastDeployedHash).To(BeEmpty())
		g.Expect(meta.FindStatusCondition(got.Status.Conditions, k0rdentv1beta1.ServiceSetServicesInReadyStateCondition)).To(BeNil())
	}, timeout).Should(Succeed())
}
