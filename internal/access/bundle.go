package access

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/apiaryhq/apiary/internal/render"
)

// RoutesBundle is the built-in bundle that renders a workspace's routes.
const RoutesBundle = "workspace-routes"

// Versions of the Gateway API route kinds.
const (
	// GatewayGroup is the Gateway API's group.
	GatewayGroup = "gateway.networking.k8s.io"
	// HTTPRouteAPIVersion is the version of HTTPRoute Apiary writes.
	HTTPRouteAPIVersion = GatewayGroup + "/v1"
)

// TCPRouteVersions are the versions of TCPRoute Apiary writes, preferred
// first: v1 (standard channel since Gateway API v1.5), else v1alpha2 (the
// experimental channel, which older installations such as the exalsius
// operator's serve alone).
var TCPRouteVersions = []string{"v1", "v1alpha2"}

// RoutesInput is what the workspace-routes bundle renders a workspace's
// routes from.
type RoutesInput struct {
	// Workspace is the WorkspaceDeployment.
	Workspace types.NamespacedName
	// UID of the workspace.
	UID string
	// Namespace holds the routes and mirror Services on the regional
	// cluster: ws-<workspace>, as on the child.
	Namespace string
	// Gateway is the tenant Gateway the routes attach to.
	Gateway types.NamespacedName
	// TCPRouteAPIVersion is the apiVersion of TCPRoutes, e.g.
	// gateway.networking.k8s.io/v1alpha2.
	TCPRouteAPIVersion string
	// Labels go on every object; the bundle adds nothing that overrides them.
	Labels map[string]string
	// NamespaceLabels go on the namespace only: the mesh's enrolment label.
	NamespaceLabels map[string]string
	// Routes are the routable endpoints (Route.Routable).
	Routes []Route
	// Operator are the manager's settings, .Input.operator.
	Operator map[string]any
}

// Request is the render request of the workspace-routes bundle; its README
// documents the input.
func (in RoutesInput) Request() render.Request {
	routes := make([]any, 0, len(in.Routes))
	for _, r := range in.Routes {
		if !r.Routable() {
			continue
		}
		m := map[string]any{
			"name":        r.Endpoint.Name,
			"protocol":    string(r.Endpoint.Protocol),
			"port":        int64(r.Endpoint.Port),
			"serviceName": r.ServiceName,
			"url":         r.URL,
		}
		if r.Hostname != "" {
			m["hostname"] = r.Hostname
		}
		if IsTCP(r.Endpoint) {
			m["listener"] = r.Listener.Name
			m["listenerPort"] = int64(r.Listener.Port)
		}
		routes = append(routes, m)
	}
	labels, operator := inputMaps(in.Labels, in.Operator)
	nsLabels, _ := inputMaps(in.NamespaceLabels, nil)
	return render.Request{Purpose: render.PurposeWorkspaceRoutes, ReleaseName: in.Workspace.Name, Namespace: in.Namespace, Input: map[string]any{
		"namespaceLabels":    nsLabels,
		"workspace":          map[string]any{"name": in.Workspace.Name, "namespace": in.Workspace.Namespace, "uid": in.UID},
		"namespace":          in.Namespace,
		"gateway":            map[string]any{"name": in.Gateway.Name, "namespace": in.Gateway.Namespace},
		"tcpRouteAPIVersion": in.TCPRouteAPIVersion,
		"labels":             labels,
		"routes":             routes,
		"operator":           operator,
	}}
}

// inputMaps returns labels as a map of any, as templates see it, and the
// operator settings, empty when nil.
func inputMaps(labels map[string]string, operator map[string]any) (map[string]any, map[string]any) {
	out := make(map[string]any, len(labels))
	for k, v := range labels {
		out[k] = v
	}
	if operator == nil {
		operator = map[string]any{}
	}
	return out, operator
}
