package activity

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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
