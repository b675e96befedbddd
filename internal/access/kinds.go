package access

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// HTTPRouteGVK is the HTTPRoute kind Apiary writes.
var HTTPRouteGVK = schema.GroupVersionKind{Group: GatewayGroup, Version: "v1", Kind: "HTTPRoute"}

// TCPRouteGVK is the TCPRoute kind of a version.
func TCPRouteGVK(version string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: GatewayGroup, Version: version, Kind: "TCPRoute"}
}

// Served reports whether a cluster serves a kind in a version.
func Served(c client.Client, gk schema.GroupKind, version string) bool {
	mappings, err := c.RESTMapper().RESTMappings(gk)
	if err != nil {
		return false
	}
	for _, m := range mappings {
		if m.GroupVersionKind.Version == version {
			return true
		}
	}
	return false
}

// ServedTCPRouteVersion is the preferred TCPRoute version a cluster serves, "" for none.
func ServedTCPRouteVersion(c client.Client) string {
	for _, version := range TCPRouteVersions {
		if Served(c, TCPRouteGVK(version).GroupKind(), version) {
			return version
		}
	}
	return ""
}
