package childcluster

import (
	"net/http"
	"sync/atomic"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

type countingRoundTripper struct {
	n    *atomic.Int64
	next http.RoundTripper
}

func (c countingRoundTripper) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// TestCoreFirstMapper maps core kinds without a request to the cluster, and
// other kinds through its discovery, once.
func TestCoreFirstMapper(t *testing.T) {
	g := NewWithT(t)
	var requests atomic.Int64
	cfg := rest.CopyConfig(children[0].Config)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingRoundTripper{n: &requests, next: rt} })
	hc, err := rest.HTTPClientFor(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	m := newCoreFirstMapper(cfg, hc)

	for kind, scope := range coreKinds {
		mapping, err := m.RESTMapping(schema.GroupKind{Kind: kind}, "v1")
		g.Expect(err).NotTo(HaveOccurred(), kind)
		g.Expect(mapping.Scope.Name()).To(Equal(scope.Name()), kind)
	}
	ns, err := m.RESTMapping(schema.GroupKind{Kind: "Namespace"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ns.Resource.Resource).To(Equal("namespaces"))
	g.Expect(requests.Load()).To(BeZero(), "core kinds are mapped without asking the cluster")

	deploy, err := m.RESTMapping(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "v1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(deploy.Resource.Resource).To(Equal("deployments"))
	g.Expect(deploy.Scope.Name()).To(Equal(meta.RESTScopeNameNamespace))
	g.Expect(requests.Load()).NotTo(BeZero(), "other kinds come from discovery")

	_, err = m.RESTMapping(schema.GroupKind{Group: "nothing.example.com", Kind: "Thing"})
	g.Expect(meta.IsNoMatchError(err)).To(BeTrue(), "a kind the cluster does not serve: %v", err)
	gvk, err := m.KindFor(schema.GroupVersionResource{Version: "v1", Resource: "services"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(gvk.Kind).To(Equal("Service"))
	single, err := m.ResourceSingularizer("deployments")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(single).To(Equal("deployment"))
}
