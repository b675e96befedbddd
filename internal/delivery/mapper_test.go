package delivery

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// countingMapper counts the mappings asked of it.
type countingMapper struct {
	meta.RESTMapper
	asked int
}

func (c *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	c.asked++
	return c.RESTMapper.RESTMapping(gk, versions...)
}

// The remembering mapper answers as the mapper it wraps, asks it once per
// kind and version within mappingTTL, again after it, and every time for a
// kind it does not know (a CRD installed later is found at once); what a
// caller does to an answer does not change the next one.
func TestTheRememberingMapperAnswersAsTheMapper(t *testing.T) {
	g := NewWithT(t)
	gv := schema.GroupVersion{Group: "k0rdent.mirantis.com", Version: "v1beta1"}
	inner := meta.NewDefaultRESTMapper([]schema.GroupVersion{gv})
	inner.Add(gv.WithKind("ServiceSet"), meta.RESTScopeNamespace)
	inner.Add(schema.GroupVersion{Version: "v1"}.WithKind("Namespace"), meta.RESTScopeRoot)
	counting := &countingMapper{RESTMapper: inner}
	now := time.Unix(1_800_000_000, 0)
	m := remembering(counting).(*rememberingMapper)
	m.now = func() time.Time { return now }

	for _, kind := range []schema.GroupVersionKind{gv.WithKind("ServiceSet"), {Version: "v1", Kind: "Namespace"}} {
		want, err := inner.RESTMapping(kind.GroupKind(), kind.Version)
		g.Expect(err).NotTo(HaveOccurred())
		for range 3 {
			got, err := m.RESTMapping(kind.GroupKind(), kind.Version)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(want))
			got.Scope = nil // a caller's change
		}
	}
	g.Expect(counting.asked).To(Equal(2), "each kind asked once")

	now = now.Add(mappingTTL)
	_, _ = m.RESTMapping(gv.WithKind("ServiceSet").GroupKind(), gv.Version)
	g.Expect(counting.asked).To(Equal(3), "asked again once remembered for mappingTTL")

	unknown := gv.WithKind("Later")
	for range 2 {
		_, err := m.RESTMapping(unknown.GroupKind(), unknown.Version)
		g.Expect(meta.IsNoMatchError(err)).To(BeTrue(), "%v", err)
	}
	g.Expect(counting.asked).To(Equal(5), "a kind it does not know is asked for every time")
	inner.Add(unknown, meta.RESTScopeNamespace)
	got, err := m.RESTMapping(unknown.GroupKind(), unknown.Version)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Scope.Name()).To(Equal(meta.RESTScopeNameNamespace))
}
