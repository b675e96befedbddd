package childcluster

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/event"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/apiaryhq/apiary/internal/testenv"
)

// installGatewayAPI installs the Gateway API's CRDs on children[1] and
// removes them when the test ends, so that the child is bare again.
func installGatewayAPI(t *testing.T) client.Client {
	t.Helper()
	files, err := testenv.GatewayAPICRDs()
	if err != nil {
		t.Fatal(err)
	}
	opts := envtest.CRDInstallOptions{Paths: files, ErrorIfPathMissing: true}
	if _, err := envtest.InstallCRDs(children[1].Config, opts); err != nil {
		t.Fatalf("installing the Gateway API: %v", err)
	}
	t.Cleanup(func() { _ = envtest.UninstallCRDs(children[1].Config, opts) })
	c, err := testenv.GatewayClient(children[1].Config)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// noEventFor fails when an event about cd arrives within a second.
func noEventFor(g Gomega, events <-chan event.GenericEvent, cd types.NamespacedName) {
	g.Consistently(func() bool {
		select {
		case e := <-events:
			return client.ObjectKeyFromObject(e.Object) == cd
		default:
			return false
		}
	}, time.Second, 10*time.Millisecond).Should(BeFalse())
}

// TestWatchWithGateways watches the Gateways of a cluster that does not
// serve the Gateway API yet: Watch succeeds and Gateway says the API is not
// installed; once it is, owners are told, and every change of a Gateway's
// listeners or conditions is notified, but not a change of what the cache
// drops (listener statuses).
func TestWatchWithGateways(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	m := newManager(t, Options{IdleTimeout: stopAtOnce})
	events := m.Subscribe(GatewayKind)
	cd := newCluster(t)
	writeKubeconfig(t, cd, kubeconfigs[1])
	key := types.NamespacedName{Namespace: "default", Name: "tenant"}

	cc, err := m.Watch(ctx, cd, "routes/ns/w", WatchOptions{Gateways: true})
	g.Expect(err).NotTo(HaveOccurred(), "a cluster without the Gateway API is no error of Watch")
	_, err = cc.Gateway(ctx, key)
	g.Expect(err).To(MatchError(ErrGatewayAPINotServed))
	g.Expect(err.Error()).To(ContainSubstring(cd.String()))
	g.Expect(cc.LastError()).NotTo(HaveOccurred(), "the Gateway API's absence says nothing about reachability")

	receiveFor(g, events, cd) // the failing list
	gw := installGatewayAPI(t)
	receiveFor(g, events, cd)
	g.Eventually(func() error {
		_, err := cc.Gateway(ctx, key)
		return err
	}, eventually).Should(Satisfy(apierrors.IsNotFound), "served now, and the Gateway does not exist")

	obj := &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
		Spec: gatewayv1.GatewaySpec{GatewayClassName: "istio", Listeners: []gatewayv1.Listener{{
			Name: "https", Protocol: gatewayv1.HTTPSProtocolType, Port: 443, Hostname: ptr.To(gatewayv1.Hostname("*.a.example.com")),
			TLS: &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{{Name: "wildcard"}}},
		}}},
	}
	g.Expect(gw.Create(ctx, obj)).To(Succeed())
	receiveFor(g, events, cd)
	g.Eventually(func(g Gomega) {
		got, err := cc.Gateway(ctx, key)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.Spec.Listeners).To(HaveLen(1))
		g.Expect(got.Spec.Listeners[0].TLS).To(BeNil(), "trimmed")
	}, eventually).Should(Succeed())

	obj.Status.Conditions = []metav1.Condition{{Type: "Programmed", Status: metav1.ConditionTrue, Reason: "Programmed",
		Message: "ok", LastTransitionTime: metav1.Now(), ObservedGeneration: obj.Generation}}
	obj.Status.Listeners = []gatewayv1.ListenerStatus{{Name: "https", AttachedRoutes: 0, SupportedKinds: []gatewayv1.RouteGroupKind{},
		Conditions: []metav1.Condition{}}}
	g.Expect(gw.Status().Update(ctx, obj)).To(Succeed())
	receiveFor(g, events, cd)
	g.Eventually(func(g Gomega) {
		got, err := cc.Gateway(ctx, key)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.Status.Conditions).To(ConsistOf(HaveField("Type", "Programmed")))
	}, eventually).Should(Succeed())

	obj.Status.Listeners[0].AttachedRoutes = 3
	g.Expect(gw.Status().Update(ctx, obj)).To(Succeed())
	noEventFor(g, events, cd)

	obj.Spec.Listeners = append(obj.Spec.Listeners, gatewayv1.Listener{Name: "ssh-0", Protocol: gatewayv1.TCPProtocolType, Port: 30022})
	g.Expect(gw.Update(ctx, obj)).To(Succeed())
	receiveFor(g, events, cd)
	g.Eventually(func(g Gomega) {
		got, err := cc.Gateway(ctx, key)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.Spec.Listeners).To(HaveLen(2))
	}, eventually).Should(Succeed())

	g.Expect(gw.Delete(ctx, obj)).To(Succeed())
	receiveFor(g, events, cd)
	g.Eventually(func() error {
		_, err := cc.Gateway(ctx, key)
		return err
	}, eventually).Should(Satisfy(apierrors.IsNotFound))

	// A second owner without Gateways keeps the cache; the Gateway
	// informer stops with its last user.
	_, err = m.Watch(ctx, cd, "colony/ns/a")
	g.Expect(err).NotTo(HaveOccurred())
	m.Release(cd, "routes/ns/w")
	_, err = cc.Gateway(ctx, key)
	g.Expect(err).To(MatchError(ErrGatewaysNotWatched))
	_, err = cc.ListNodes(ctx)
	g.Expect(err).NotTo(HaveOccurred())
}

// TestReleaseElsewhere releases an owner from every cluster but those it keeps.
func TestReleaseElsewhere(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	m := newManager(t, Options{IdleTimeout: stopAtOnce})
	a, b := newCluster(t), newCluster(t)
	writeKubeconfig(t, a, kubeconfigs[0])
	writeKubeconfig(t, b, kubeconfigs[0])
	for _, cd := range []types.NamespacedName{a, b} {
		_, err := m.Watch(ctx, cd, "routes/ns/w", WatchOptions{Gateways: true})
		g.Expect(err).NotTo(HaveOccurred())
	}
	_, err := m.Watch(ctx, b, "colony/ns/c")
	g.Expect(err).NotTo(HaveOccurred())

	m.ReleaseElsewhere("routes/ns/w", a)
	g.Expect(m.Owners(a)).To(ConsistOf("routes/ns/w"))
	g.Expect(m.Owners(b)).To(ConsistOf("colony/ns/c"))

	m.ReleaseElsewhere("routes/ns/w")
	g.Expect(m.Owners(a)).To(BeEmpty())
	g.Expect(m.States()).NotTo(ContainElement(HaveField("Cluster", a)), "a's cache stopped with its last owner")
}
