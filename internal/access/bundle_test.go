package access

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/render"
)

func renderRoutes(t *testing.T, in RoutesInput) ([]*unstructured.Unstructured, error) {
	t.Helper()
	return renderBundle(t, RoutesBundle, in.Request())
}

// renderBundle renders a built-in bundle.
func renderBundle(t *testing.T, name string, req render.Request) ([]*unstructured.Unstructured, error) {
	t.Helper()
	reg, err := render.NewRegistry("")
	if err != nil {
		t.Fatal(err)
	}
	b, err := reg.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	out, err := b.Render(req)
	if err != nil {
		return nil, err
	}
	return out.Objects, nil
}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

func routesInput(routes []Route) RoutesInput {
	return RoutesInput{
		Workspace:          types.NamespacedName{Namespace: "team", Name: "nb"},
		UID:                "uid-1",
		Namespace:          "ws-nb",
		Gateway:            types.NamespacedName{Namespace: "istio-system", Name: "istio-ingressgateway"},
		TCPRouteAPIVersion: GatewayGroup + "/v1alpha2",
		Labels:             map[string]string{"workspaces.exalsius.ai/workspace": "nb"},
		NamespaceLabels:    map[string]string{"istio.io/dataplane-mode": "ambient"},
		Routes:             routes,
	}
}

func TestRoutesBundle(t *testing.T) {
	g := NewWithT(t)
	tenant := Tenant{Domain: "acme.example.com", Scheme: "https", Pool: []Listener{{"ssh-0", 30022}}}
	routes := Plan(PlanInput{Workspace: "nb", Release: "wsd-c1-nb", Tenant: tenant, Gateway: "istio-system/istio-ingressgateway",
		Endpoints: []workspacesv1.AccessEndpoint{
			{Name: "web", Protocol: workspacesv1.AccessProtocolHTTP, Port: 8888},
			{Name: "api", Protocol: workspacesv1.AccessProtocolHTTP, Port: 8000, ServiceName: "shared"},
			{Name: "ssh", Protocol: workspacesv1.AccessProtocolSSH, Port: 22},
			{Name: "db", Protocol: workspacesv1.AccessProtocolTCP, Port: 5432, ServiceName: "shared"},
			{Name: "db2", Protocol: workspacesv1.AccessProtocolTCP, Port: 5433},
		},
		Ports: map[string]Listener{"ssh": {"ssh-0", 30022}, "db": {"ssh-0", 30022}}})
	objs, err := renderRoutes(t, routesInput(routes))
	g.Expect(err).NotTo(HaveOccurred())

	ns := find(objs, "Namespace", "ws-nb")
	g.Expect(ns).NotTo(BeNil())
	g.Expect(ns.GetLabels()).To(HaveKeyWithValue("workspaces.exalsius.ai/workspace", "nb"))
	g.Expect(ns.GetLabels()).To(HaveKeyWithValue("istio.io/dataplane-mode", "ambient"), "the namespace is enrolled in the mesh")

	web := find(objs, "HTTPRoute", "web")
	g.Expect(web).NotTo(BeNil())
	g.Expect(web.GetAPIVersion()).To(Equal(HTTPRouteAPIVersion))
	g.Expect(web.GetNamespace()).To(Equal("ws-nb"))
	g.Expect(web.GetLabels()).To(HaveKeyWithValue("workspaces.exalsius.ai/workspace", "nb"))
	g.Expect(web.GetLabels()).NotTo(HaveKey("istio.io/dataplane-mode"), "enrolment labels are the namespace's only")
	hosts, _, _ := unstructured.NestedStringSlice(web.Object, "spec", "hostnames")
	g.Expect(hosts).To(Equal([]string{"nb.acme.example.com"}))
	parents, _, _ := unstructured.NestedSlice(web.Object, "spec", "parentRefs")
	g.Expect(parents).To(Equal([]any{map[string]any{"name": "istio-ingressgateway", "namespace": "istio-system"}}))
	rules, _, _ := unstructured.NestedSlice(web.Object, "spec", "rules")
	g.Expect(rules).To(Equal([]any{map[string]any{"backendRefs": []any{map[string]any{"name": "wsd-c1-nb-web", "port": int64(8888)}}}}))

	ssh := find(objs, "TCPRoute", "ssh")
	g.Expect(ssh).NotTo(BeNil())
	g.Expect(ssh.GetAPIVersion()).To(Equal("gateway.networking.k8s.io/v1alpha2"))
	parents, _, _ = unstructured.NestedSlice(ssh.Object, "spec", "parentRefs")
	g.Expect(parents).To(Equal([]any{map[string]any{"name": "istio-ingressgateway", "namespace": "istio-system", "sectionName": "ssh-0"}}))
	g.Expect(find(objs, "TCPRoute", "db2")).To(BeNil(), "an endpoint without a port is not routed")

	// One mirror Service per child Service, selector-less, with the
	// endpoints' ports and the mesh label.
	shared := find(objs, "Service", "shared")
	g.Expect(shared).NotTo(BeNil())
	g.Expect(shared.GetLabels()).To(HaveKeyWithValue("istio.io/global", "true"))
	svcPorts, _, _ := unstructured.NestedSlice(shared.Object, "spec", "ports")
	g.Expect(svcPorts).To(Equal([]any{
		map[string]any{"name": "api", "port": int64(8000), "protocol": "TCP"},
		map[string]any{"name": "db", "port": int64(5432), "protocol": "TCP"},
	}))
	_, hasSelector, _ := unstructured.NestedFieldNoCopy(shared.Object, "spec", "selector")
	g.Expect(hasSelector).To(BeFalse())
	g.Expect(find(objs, "Service", "wsd-c1-nb-web")).NotTo(BeNil())
	g.Expect(find(objs, "Service", "wsd-c1-nb-ssh")).NotTo(BeNil())
	g.Expect(find(objs, "Service", "wsd-c1-nb-db2")).To(BeNil())
	g.Expect(objs).To(HaveLen(1 + 3 + 2 + 2))
}

func TestRoutesBundleRefusesBadInput(t *testing.T) {
	ssh := Route{Endpoint: workspacesv1.AccessEndpoint{Name: "ssh", Protocol: workspacesv1.AccessProtocolSSH, Port: 22},
		ServiceName: "s", Listener: Listener{"p", 1}, URL: "ssh://d:1"}
	tests := []struct {
		name   string
		mutate func(*RoutesInput)
		want   string
	}{
		{name: "no namespace", mutate: func(in *RoutesInput) { in.Namespace = "" }, want: "needs the namespace its objects belong in"},
		{name: "no gateway", mutate: func(in *RoutesInput) { in.Gateway.Name = "" }, want: "input gateway.name is required"},
		{name: "TCP without apiVersion", mutate: func(in *RoutesInput) { in.TCPRouteAPIVersion = ""; in.Routes = []Route{ssh} },
			want: "tcpRouteAPIVersion is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			in := routesInput(nil)
			tt.mutate(&in)
			_, err := renderRoutes(t, in)
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).To(ContainSubstring(tt.want))
			g.Expect(err.Error()).To(ContainSubstring(`bundle "workspace-routes"`))
		})
	}
}

func TestRoutesBundleWithoutRoutesRendersTheNamespace(t *testing.T) {
	g := NewWithT(t)
	objs, err := renderRoutes(t, routesInput(nil))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(HaveLen(1))
	g.Expect(objs[0].GetKind()).To(Equal("Namespace"))
}
