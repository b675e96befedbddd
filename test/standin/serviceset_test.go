package standin

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
)

// provisioned creates a ClusterDeployment and waits until it is ready.
func provisioned(t *testing.T, g Gomega, ns, name string) *k0rdentv1beta1.ClusterDeployment {
	t.Helper()
	cd := NewClusterDeployment(ns, name, "tpl", "cred")
	g.Expect(mgmt.Client.Create(context.Background(), cd)).To(Succeed())
	expectCondition(g, cd, k0rdentv1beta1.CAPIClusterSummaryCondition, metav1.ConditionTrue, k0rdentv1beta1.SucceededReason, Not(BeEmpty()))
	return cd
}

// service returns a ServiceSet entry of a template, released into a namespace.
func service(name, namespace, template, values string) k0rdentv1beta1.ServiceWithValues {
	return k0rdentv1beta1.ServiceWithValues{Name: name, Namespace: namespace, Template: template, Values: values}
}

func getServiceSet(g Gomega, ss *k0rdentv1beta1.ServiceSet) *k0rdentv1beta1.ServiceSet {
	got := &k0rdentv1beta1.ServiceSet{}
	g.Expect(mgmt.Client.Get(context.Background(), client.ObjectKeyFromObject(ss), got)).To(Succeed())
	return got
}

// expectService waits until a service of the ServiceSet has the state and
// failure message, with the conditions of the current generation.
func expectService(g Gomega, ss *k0rdentv1beta1.ServiceSet, name, state string, msg types.GomegaMatcher) {
	g.Eventually(func(g Gomega) {
		got := getServiceSet(g, ss)
		st := findState(got.Status.Services, name, findEntry(got, name).Namespace)
		g.Expect(st).NotTo(BeNil(), "state of service %s", name)
		g.Expect(st.State).To(Equal(state), "service %s: %s", name, st.FailureMessage)
		g.Expect(st.FailureMessage).To(msg)
		g.Expect(st.Type).To(Equal(k0rdentv1beta1.ServiceTypeHelm))
		g.Expect(st.LastStateTransitionTime).NotTo(BeNil())
		for _, typ := range []string{k0rdentv1beta1.ServiceSetProfileCondition, k0rdentv1beta1.ServiceSetStatusesCollectedCondition} {
			c := meta.FindStatusCondition(got.Status.Conditions, typ)
			g.Expect(c).NotTo(BeNil(), typ)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), typ)
			g.Expect(c.ObservedGeneration).To(Equal(got.Generation), typ)
		}
	}, timeout).Should(Succeed())
}

func findEntry(ss *k0rdentv1beta1.ServiceSet, name string) *k0rdentv1beta1.ServiceWithValues {
	for i := range ss.Spec.Services {
		if ss.Spec.Services[i].Name == name {
			return &ss.Spec.Services[i]
		}
	}
	return &k0rdentv1beta1.ServiceWithValues{}
}

// releaseRecords lists the Helm storage Secrets of a release on the child.
func releaseRecords(g Gomega, namespace, release string) []string {
	var list corev1.SecretList
	g.Expect(child.Client.List(context.Background(), &list, client.InNamespace(namespace),
		client.MatchingLabels{"owner": "helm", "name": release})).To(Succeed())
	var names []string
	for _, s := range list.Items {
		names = append(names, s.Name)
	}
	return names
}

// releasedValues reads the values a workspace release recorded on the child.
func releasedValues(g Gomega, namespace, release string) map[string]any {
	cm := &corev1.ConfigMap{}
	g.Expect(child.Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: release + ValuesConfigMapSuffix}, cm)).To(Succeed())
	values := map[string]any{}
	g.Expect(json.Unmarshal([]byte(cm.Data[ValuesConfigMapKey]), &values)).To(Succeed())
	return values
}

func TestServiceSetDeploysUpgradesAndDeletes(t *testing.T) {
	g := NewWithT(t)
	ctx, ns := fixture(t, g)
	cd := provisioned(t, g, ns, "c1")
	g.Expect(CreateWithStatus(ctx, mgmt.Client, NewServiceTemplate(ns, "ws", true, map[string]string{AnnotationDelay: "2s"}))).To(Succeed())
	extra := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ws-extra"},
		StringData: map[string]string{"values.yaml": "fromSecret: true\nnested:\n  b: 2\n"},
	}
	g.Expect(mgmt.Client.Create(ctx, extra)).To(Succeed())
	target := child.NewNamespace(t, "ws")
	entry := service("ws-a", target, "ws", `{"greeting":"hello","nested":{"a":1,"b":1},"endpoints":[{"name":"http","port":8080}]}`)
	entry.ValuesFrom = []k0rdentv1beta1.ValuesFrom{{Kind: "Secret", Name: "ws-extra"}}
	ss := NewServiceSet(ns, "c1-ws", "c1", entry)
	g.Expect(mgmt.Client.Create(ctx, ss)).To(Succeed())

	expectService(g, ss, "ws-a", k0rdentv1beta1.ServiceStateProvisioning, BeEmpty())
	expectService(g, ss, "ws-a", k0rdentv1beta1.ServiceStateDeployed, BeEmpty())
	got := getServiceSet(g, ss)
	g.Expect(got.Finalizers).To(ContainElement(k0rdentv1beta1.ServiceSetFinalizer))
	g.Expect(got.Status.Deployed).To(BeTrue())
	g.Expect(got.Status.Provider.Ready).To(BeTrue())
	g.Expect(got.Status.Cluster).To(Equal(&corev1.ObjectReference{
		APIVersion: k0rdentv1beta1.GroupVersion.String(), Kind: k0rdentv1beta1.ClusterDeploymentKind, Namespace: ns, Name: "c1",
	}))

	// The child holds the release, with values and valuesFrom merged.
	g.Expect(releaseRecords(g, target, "ws-a")).To(ConsistOf("sh.helm.release.v1.ws-a.v1"))
	values := releasedValues(g, target, "ws-a")
	g.Expect(values).To(HaveKeyWithValue("greeting", "hello"))
	g.Expect(values).To(HaveKeyWithValue("fromSecret", true))
	g.Expect(values).To(HaveKeyWithValue("nested", map[string]any{"a": 1.0, "b": 2.0}))
	svc := &corev1.Service{}
	g.Expect(child.Client.Get(ctx, client.ObjectKey{Namespace: target, Name: "ws-a-http"}, svc)).To(Succeed())
	g.Expect(svc.Spec.Type).To(Equal(corev1.ServiceTypeClusterIP))
	g.Expect(svc.Spec.Ports).To(HaveLen(1))
	g.Expect(svc.Spec.Ports[0].Port).To(BeEquivalentTo(8080))

	// The ClusterDeployment lists the services of its ServiceSets.
	expectCondition(g, cd, k0rdentv1beta1.ServicesInReadyStateCondition, metav1.ConditionTrue, k0rdentv1beta1.SucceededReason, Equal("1/1"))
	g.Expect(mustGet(g, cd).Status.Services).To(ContainElement(And(
		HaveField("Name", "ws-a"), HaveField("Namespace", target), HaveField("State", k0rdentv1beta1.ServiceStateDeployed))))
	cluster := client.ObjectKeyFromObject(cd)
	g.Expect(services.Installs(cluster, target, "ws-a")).To(Equal(1))

	// A spec change goes through Provisioning again and upgrades the release.
	got = getServiceSet(g, ss)
	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.Services[0].Values = `{"greeting":"bonjour","nested":{"a":1}}`
	g.Expect(mgmt.Client.Patch(ctx, got, patch)).To(Succeed())
	expectService(g, ss, "ws-a", k0rdentv1beta1.ServiceStateProvisioning, BeEmpty())
	expectService(g, ss, "ws-a", k0rdentv1beta1.ServiceStateDeployed, BeEmpty())
	values = releasedValues(g, target, "ws-a")
	g.Expect(values).To(HaveKeyWithValue("greeting", "bonjour"))
	g.Expect(values).To(HaveKeyWithValue("endpoints", BeEmpty()))
	g.Expect(releaseRecords(g, target, "ws-a")).To(ContainElement("sh.helm.release.v1.ws-a.v2"))
	g.Expect(child.Client.Get(ctx, client.ObjectKey{Namespace: target, Name: "ws-a-http"}, svc)).
		To(WithTransform(apierrors.IsNotFound, BeTrue()), "the endpoint left the values")
	g.Expect(services.Installs(cluster, target, "ws-a")).To(Equal(1))
	g.Expect(services.Upgrades(cluster, target, "ws-a")).To(Equal(1))

	// A change of a valuesFrom object reaches the child too.
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(extra), extra)).To(Succeed())
	extra.Data["values.yaml"] = []byte("nested:\n  b: 3\n")
	g.Expect(mgmt.Client.Update(ctx, extra)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(releasedValues(g, target, "ws-a")).To(HaveKeyWithValue("nested", map[string]any{"a": 1.0, "b": 3.0}))
	}, timeout).Should(Succeed())
	expectService(g, ss, "ws-a", k0rdentv1beta1.ServiceStateDeployed, BeEmpty())

	// Deletion uninstalls the release and releases the ServiceSet.
	g.Expect(mgmt.Client.Delete(ctx, ss)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(ss), &k0rdentv1beta1.ServiceSet{}))
	}, timeout).Should(BeTrue(), "the ServiceSet is released")
	g.Expect(releaseRecords(g, target, "ws-a")).To(BeEmpty())
	err := child.Client.Get(ctx, client.ObjectKey{Namespace: target, Name: "ws-a" + ValuesConfigMapSuffix}, &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "values ConfigMap after uninstall: %v", err)
	expectCondition(g, cd, k0rdentv1beta1.ServicesInReadyStateCondition, metav1.ConditionTrue, k0rdentv1beta1.SucceededReason, Equal("0/0"))
}

func TestServiceTemplateKnobs(t *testing.T) {
	g := NewWithT(t)
	ctx, ns := fixture(t, g)
	cd := provisioned(t, g, ns, "knobs")
	target := child.NewNamespace(t, "knobs")
	for _, tpl := range []*k0rdentv1beta1.ServiceTemplate{
		NewServiceTemplate(ns, "failing", true, map[string]string{AnnotationFail: "chart exploded"}),
		NewServiceTemplate(ns, "hanging", true, map[string]string{AnnotationHang: "true"}),
		NewServiceTemplate(ns, "invalid", false, nil),
		NewServiceTemplate(ns, "unknown-chart", true, map[string]string{AnnotationChart: "nope"}),
	} {
		g.Expect(CreateWithStatus(ctx, mgmt.Client, tpl)).To(Succeed())
	}
	ss := NewServiceSet(ns, "knobs", "knobs",
		service("failing", target, "failing", ""),
		service("hanging", target, "hanging", ""),
		service("invalid", target, "invalid", ""),
		service("missing", target, "missing", ""),
		service("unknown-chart", target, "unknown-chart", ""),
	)
	g.Expect(mgmt.Client.Create(ctx, ss)).To(Succeed())

	expectService(g, ss, "failing", k0rdentv1beta1.ServiceStateFailed, Equal("chart exploded"))
	expectService(g, ss, "hanging", k0rdentv1beta1.ServiceStateProvisioning, BeEmpty())
	expectService(g, ss, "invalid", k0rdentv1beta1.ServiceStatePending, BeEmpty())
	expectService(g, ss, "missing", k0rdentv1beta1.ServiceStatePending, BeEmpty())
	expectService(g, ss, "unknown-chart", k0rdentv1beta1.ServiceStateFailed, ContainSubstring(`no chart "nope"`))
	g.Expect(getServiceSet(g, ss).Status.Deployed).To(BeFalse())
	expectCondition(g, cd, k0rdentv1beta1.ServicesInReadyStateCondition, metav1.ConditionFalse, k0rdentv1beta1.FailedReason, Equal("0/5"))
	expectCondition(g, cd, k0rdentv1beta1.ReadyCondition, metav1.ConditionFalse, k0rdentv1beta1.ProgressingReason, ContainSubstring("0/5"))

	// Nothing was installed, and a hanging service stays Provisioning.
	g.Consistently(func(g Gomega) {
		st := findState(getServiceSet(g, ss).Status.Services, "hanging", target)
		g.Expect(st.State).To(Equal(k0rdentv1beta1.ServiceStateProvisioning))
		var list corev1.SecretList
		g.Expect(child.Client.List(ctx, &list, client.InNamespace(target), client.MatchingLabels{"owner": "helm"})).To(Succeed())
		g.Expect(list.Items).To(BeEmpty())
	}, 3*time.Second, 500*time.Millisecond).Should(Succeed())

	// Lifting the knobs and creating the missing template deploys the services.
	for _, name := range []string{"failing", "hanging"} {
		tpl := &k0rdentv1beta1.ServiceTemplate{}
		g.Expect(mgmt.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, tpl)).To(Succeed())
		patch := client.MergeFrom(tpl.DeepCopy())
		tpl.Annotations = nil
		g.Expect(mgmt.Client.Patch(ctx, tpl, patch)).To(Succeed())
	}
	g.Expect(CreateWithStatus(ctx, mgmt.Client, NewServiceTemplate(ns, "missing", true, nil))).To(Succeed())
	for _, name := range []string{"failing", "hanging", "missing"} {
		expectService(g, ss, name, k0rdentv1beta1.ServiceStateDeployed, BeEmpty())
		g.Expect(releaseRecords(g, target, name)).To(HaveLen(1), name)
	}
	expectCondition(g, cd, k0rdentv1beta1.ServicesInReadyStateCondition, metav1.ConditionFalse, k0rdentv1beta1.FailedReason, Equal("3/5"))
}

func TestInstantServiceTemplate(t *testing.T) {
	g := NewWithT(t)
	ctx, ns := fixture(t, g)
	provisioned(t, g, ns, "instant")
	target := child.NewNamespace(t, "instant")
	g.Expect(CreateWithStatus(ctx, mgmt.Client, NewServiceTemplate(ns, "quick", true, map[string]string{AnnotationInstant: "true"}))).To(Succeed())
	ss := NewServiceSet(ns, "instant", "instant", service("quick", target, "quick", ""))
	g.Expect(mgmt.Client.Create(ctx, ss)).To(Succeed())

	expectService(g, ss, "quick", k0rdentv1beta1.ServiceStateDeployed, BeEmpty())
	g.Expect(getServiceSet(g, ss).Status.Deployed).To(BeTrue())
	g.Expect(releaseRecords(g, target, "quick")).To(BeEmpty(), "no Helm release is installed")
	g.Expect(services.Installs(client.ObjectKey{Namespace: ns, Name: "instant"}, target, "quick")).To(Equal(1), "it counts as an install")
}

func TestReleaseNamespace(t *testing.T) {
	g := NewWithT(t)
	ctx, ns := fixture(t, g)
	provisioned(t, g, ns, "nsc")
	g.Expect(CreateWithStatus(ctx, mgmt.Client, NewServiceTemplate(ns, "ws", true, nil))).To(Succeed())
	absent := "absent-" + rand.String(5)
	created := "created-" + rand.String(5)
	t.Cleanup(func() {
		for _, n := range []string{absent, created} {
			_ = child.Client.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}})
		}
	})
	withCreate := service("made", created, "ws", "")
	withCreate.HelmOptions = &k0rdentv1beta1.ServiceHelmOptions{InstallOptions: &apiextensionsv1.JSON{Raw: []byte(`{"createNamespace":true}`)}}
	ss := NewServiceSet(ns, "nsc", "nsc", service("lost", absent, "ws", ""), withCreate)
	g.Expect(mgmt.Client.Create(ctx, ss)).To(Succeed())

	// Helm creates the namespace only when asked to.
	expectService(g, ss, "made", k0rdentv1beta1.ServiceStateDeployed, BeEmpty())
	g.Expect(releaseRecords(g, created, "made")).To(HaveLen(1))
	expectService(g, ss, "lost", k0rdentv1beta1.ServiceStateFailed, ContainSubstring(`namespaces "`+absent+`" not found`))

	// Once the namespace exists, the retry succeeds.
	g.Expect(child.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: absent}})).To(Succeed())
	expectService(g, ss, "lost", k0rdentv1beta1.ServiceStateDeployed, BeEmpty())
	g.Expect(getServiceSet(g, ss).Status.Deployed).To(BeTrue())
}

func TestPrerequisiteInstalledOnce(t *testing.T) {
	g := NewWithT(t)
	ctx, ns := fixture(t, g)
	cd := provisioned(t, g, ns, "pre")
	g.Expect(CreateWithStatus(ctx, mgmt.Client, NewServiceTemplate(ns, "prereq", true, map[string]string{AnnotationChart: ChartPrerequisite}))).To(Succeed())
	g.Expect(CreateWithStatus(ctx, mgmt.Client, NewServiceTemplate(ns, "ws", true, nil))).To(Succeed())
	target := child.NewNamespace(t, "pre")
	ss := NewServiceSet(ns, "pre", "pre", service("operator", target, "prereq", ""))
	g.Expect(mgmt.Client.Create(ctx, ss)).To(Succeed())
	expectService(g, ss, "operator", k0rdentv1beta1.ServiceStateDeployed, BeEmpty())
	cm := &corev1.ConfigMap{}
	g.Expect(child.Client.Get(ctx, client.ObjectKey{Namespace: target, Name: "operator" + InstalledConfigMapSuffix}, cm)).To(Succeed())
	g.Expect(cm.Data).To(HaveKeyWithValue("chart", "prerequisite-0.1.0"))

	// More services and more reconciles never install the release again.
	got := getServiceSet(g, ss)
	patch := client.MergeFrom(got.DeepCopy())
	got.Spec.Services = append(got.Spec.Services, service("ws", target, "ws", ""))
	g.Expect(mgmt.Client.Patch(ctx, got, patch)).To(Succeed())
	expectService(g, ss, "ws", k0rdentv1beta1.ServiceStateDeployed, BeEmpty())
	expectService(g, ss, "operator", k0rdentv1beta1.ServiceStateDeployed, BeEmpty())
	cluster := client.ObjectKeyFromObject(cd)
	g.Expect(services.Installs(cluster, target, "operator")).To(Equal(1))
	g.Expect(services.Installs(cluster, target, "ws")).To(Equal(1))
	g.Expect(services.Installs(client.ObjectKey{Namespace: ns, Name: "elsewhere"}, target, "operator")).To(BeZero())

	// A service that leaves the spec is uninstalled.
	got = getServiceSet(g, ss)
	patch = client.MergeFrom(got.DeepCopy())
	got.Spec.Services = got.Spec.Services[1:]
	g.Expect(mgmt.Client.Patch(ctx, got, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(getServiceSet(g, ss).Status.Services).To(ConsistOf(HaveField("Name", "ws")))
		g.Expect(releaseRecords(g, target, "operator")).To(BeEmpty())
	}, timeout).Should(Succeed())
	err := child.Client.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "prerequisite ConfigMap after uninstall: %v", err)
}

func TestServiceSetWithoutCluster(t *testing.T) {
	g := NewWithT(t)
	ctx, ns := fixture(t, g)
	g.Expect(CreateWithStatus(ctx, mgmt.Client, NewServiceTemplate(ns, "ws", true, nil))).To(Succeed())
	ss := NewServiceSet(ns, "nowhere", "nowhere", service("ws", "default", "ws", ""))
	g.Expect(mgmt.Client.Create(ctx, ss)).To(Succeed())
	expectService(g, ss, "ws", k0rdentv1beta1.ServiceStatePending, BeEmpty())
	g.Expect(getServiceSet(g, ss).Status.Deployed).To(BeFalse())

	// Without a cluster there is nothing to uninstall.
	g.Expect(mgmt.Client.Delete(ctx, ss)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(ss), &k0rdentv1beta1.ServiceSet{}))
	}, timeout).Should(BeTrue())
}

func TestClusterDeletionRemovesItsServiceSets(t *testing.T) {
	g := NewWithT(t)
	ctx, ns := fixture(t, g)
	cd := provisioned(t, g, ns, "owner")
	g.Expect(CreateWithStatus(ctx, mgmt.Client, NewServiceTemplate(ns, "ws", true, nil))).To(Succeed())
	target := child.NewNamespace(t, "owner")
	ss := NewServiceSet(ns, "owner", "owner", service("ws", target, "ws", ""))
	g.Expect(controllerutil.SetControllerReference(mustGet(g, cd), ss, mgmt.Scheme)).To(Succeed())
	g.Expect(mgmt.Client.Create(ctx, ss)).To(Succeed())
	expectService(g, ss, "ws", k0rdentv1beta1.ServiceStateDeployed, BeEmpty())
	expectCondition(g, cd, k0rdentv1beta1.ReadyCondition, metav1.ConditionTrue, k0rdentv1beta1.SucceededReason, Equal(ReadyMessage))

	g.Expect(mgmt.Client.Delete(ctx, cd)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(cd), &k0rdentv1beta1.ClusterDeployment{}))
	}, timeout).Should(BeTrue(), "the ClusterDeployment is released")
	err := mgmt.Client.Get(ctx, client.ObjectKeyFromObject(ss), &k0rdentv1beta1.ServiceSet{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "ServiceSet of a deleted cluster: %v", err)
	g.Expect(releaseRecords(g, target, "ws")).To(BeEmpty())
}

func TestUnreachableCluster(t *testing.T) {
	g := NewWithT(t)
	ctx, ns := fixture(t, g)
	running.Route(ns+"/far", UnreachableKubeconfig())
	t.Cleanup(func() { running.Unroute(ns + "/far") })
	provisioned(t, g, ns, "far")
	g.Expect(CreateWithStatus(ctx, mgmt.Client, NewServiceTemplate(ns, "ws", true, nil))).To(Succeed())
	ss := NewServiceSet(ns, "far", "far", service("ws", "default", "ws", ""))
	g.Expect(mgmt.Client.Create(ctx, ss)).To(Succeed())
	expectService(g, ss, "ws", k0rdentv1beta1.ServiceStateFailed, ContainSubstring("unreachable"))

	// Deletion gives the unreachable cluster up after a grace.
	g.Expect(mgmt.Client.Delete(ctx, ss)).To(Succeed())
	expectService(g, ss, "ws", k0rdentv1beta1.ServiceStateDeleting, BeEmpty())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(ss), &k0rdentv1beta1.ServiceSet{}))
	}, timeout).Should(BeTrue(), "the ServiceSet is released")
}
