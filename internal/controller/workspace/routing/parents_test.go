package routing

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

func TestGatewaySections(t *testing.T) {
	gw := types.NamespacedName{Namespace: "gw-system", Name: "tenant"}
	route := func(refs ...any) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"parentRefs": refs}}}
		u.SetNamespace("ws-nb")
		return u
	}
	for _, tc := range []struct {
		name  string
		route *unstructured.Unstructured
		want  []string
	}{
		{"no parents", &unstructured.Unstructured{Object: map[string]any{}}, nil},
		{"the Gateway with a section", route(map[string]any{"name": "tenant", "namespace": "gw-system", "sectionName": "ssh-0"}), []string{"ssh-0"}},
		{"the Gateway without a section", route(map[string]any{"name": "tenant", "namespace": "gw-system", "kind": "Gateway"}), []string{""}},
		{"namespace defaults to the route's", route(map[string]any{"name": "tenant"}), nil},
		{"another kind", route(map[string]any{"name": "tenant", "namespace": "gw-system", "kind": "Service"}), nil},
		{"another Gateway", route(map[string]any{"name": "other", "namespace": "gw-system"}), nil},
		{"malformed ref", route("tenant", map[string]any{"name": "tenant", "namespace": "gw-system", "sectionName": "a"}), []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(gatewaySections(tc.route, gw)).To(Equal(tc.want))
			g.Expect(attached(tc.route, gw)).To(Equal(len(tc.want) > 0))
		})
	}
	local := route(map[string]any{"name": "tenant"})
	NewWithT(t).Expect(gatewaySections(local, types.NamespacedName{Namespace: "ws-nb", Name: "tenant"})).To(Equal([]string{""}))
}
