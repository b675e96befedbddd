package activity

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/apiaryhq/apiary/internal/childcluster"
)

// TestEndpointThroughARealAPIServer asks a real API server's Service proxy,
// through childcluster.Manager.RESTConfig: it cannot proxy to a server of
// the test (loopback endpoints are refused), so the test stops at what the
// proxy answers for a Service without endpoints, and for no Service.
func TestEndpointThroughARealAPIServer(t *testing.T) {
	if child == nil {
		t.Skip("no control plane while fuzzing")
	}
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	kubeconfig, err := child.Kubeconfig()
	g.Expect(err).NotTo(HaveOccurred())
	cd := types.NamespacedName{Namespace: child.NewNamespace(t, "cd"), Name: "cd-1"}
	g.Expect(child.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: cd.Namespace, Name: cd.Name + childcluster.KubeconfigSecretSuffix},
		Data:       map[string][]byte{childcluster.KubeconfigSecretKey: kubeconfig},
	})).To(Succeed())
	ns := child.NewNamespace(t, "ws")
	g.Expect(child.Client.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nb-jupyter"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "nb"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 8888}}},
	})).To(Succeed())
	// envtest runs no endpoints controller, and the service proxy reads the
	// Service's Endpoints (404 without them): here they are, empty.
	g.Expect(child.Client.Create(ctx, &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nb-jupyter"}})).To(Succeed())
	m := childcluster.NewManager(child.Client, childcluster.Options{})
	t.Cleanup(m.Stop)
	src := &Endpoint{Clusters: m}

	tgt := Target{Cluster: cd, Namespace: ns, Service: "nb-jupyter", Port: 8888, Format: JupyterStatus, Token: token}
	_, err = src.Observe(ctx, tgt, now)
	g.Expect(err).To(MatchError(ContainSubstring("HTTP 503")), "the proxy found the Service, and no endpoint behind it")
	g.Expect(err.Error()).NotTo(ContainSubstring("odd=chars"))

	tgt.Service = "absent"
	_, err = src.Observe(ctx, tgt, now)
	g.Expect(err).To(MatchError(ContainSubstring("HTTP 404")))

	tgt.Cluster.Name = "cd-2"
	obs := (&Prober{Sources: map[Format]Source{JupyterStatus: src}}).Observe(ctx, tgt, now)
	g.Expect(obs.Known).To(BeFalse())
	g.Expect(obs.Detail).To(ContainSubstring("kubeconfig not found"))
}

// TestARealServiceProxyDoesNotFollowExternalName: a real API server's
// Service proxy, asked for an ExternalName Service pointing at a server of
// the test, does not reach it (it reads the Service's Endpoints only); and
// the endpoint source refuses such a Service before asking its proxy, so
// that no proxy of another version is trusted on it.
func TestARealServiceProxyDoesNotFollowExternalName(t *testing.T) {
	if child == nil {
		t.Skip("no control plane while fuzzing")
	}
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var hits atomic.Int32
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte(`{"last_activity":"2026-12-03T11:00:00Z"}`))
	}))
	defer target.Close()
	_, portText, err := net.SplitHostPort(target.Listener.Addr().String())
	g.Expect(err).NotTo(HaveOccurred())
	port, _ := strconv.Atoi(portText)

	kubeconfig, err := child.Kubeconfig()
	g.Expect(err).NotTo(HaveOccurred())
	cd := types.NamespacedName{Namespace: child.NewNamespace(t, "cd"), Name: "cd-1"}
	g.Expect(child.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: cd.Namespace, Name: cd.Name + childcluster.KubeconfigSecretSuffix},
		Data:       map[string][]byte{childcluster.KubeconfigSecretKey: kubeconfig},
	})).To(Succeed())
	ns := child.NewNamespace(t, "ws")
	g.Expect(child.Client.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nb-jupyter"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost",
			Ports: []corev1.ServicePort{{Name: "http", Port: int32(port)}}},
	})).To(Succeed())
	m := childcluster.NewManager(child.Client, childcluster.Options{})
	t.Cleanup(m.Stop)

	// The proxy itself, asked directly: it does not follow externalName.
	cfg, err := m.RESTConfig(ctx, cd)
	g.Expect(err).NotTo(HaveOccurred())
	hc, err := rest.HTTPClientFor(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	path, err := ProxyPath(Target{Namespace: ns, Service: "nb-jupyter", Port: int32(port), Format: JupyterStatus})
	g.Expect(err).NotTo(HaveOccurred())
	resp, err := hc.Get(cfg.Host + path)
	g.Expect(err).NotTo(HaveOccurred())
	_ = resp.Body.Close()
	g.Expect(resp.StatusCode).To(BeElementOf(http.StatusNotFound, http.StatusServiceUnavailable))
	g.Expect(hits.Load()).To(BeZero(), "the API server did not follow the ExternalName")

	// The source refuses it, counted as refused, before asking the proxy.
	src := &Endpoint{Clusters: m}
	tgt := Target{Cluster: cd, Namespace: ns, Service: "nb-jupyter", Port: int32(port), Format: JupyterStatus}
	_, err = src.Observe(ctx, tgt, now)
	var refused *RefusedError
	g.Expect(errors.As(err, &refused)).To(BeTrue(), "%v", err)
	obs := (&Prober{Sources: map[Format]Source{JupyterStatus: src}}).Observe(ctx, tgt, now)
	g.Expect(obs.Refused).To(BeTrue())
	g.Expect(hits.Load()).To(BeZero())
}
