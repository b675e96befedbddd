// Package mesh says how a workspace's namespaces join the tenant's Istio
// mesh, as the exalsius operator does (its --workspace-mesh-mode and
// --workspace-waypoint-* flags, ADR-0005): the enrolment labels of ws-<name>
// on the child cluster and of its mirror on the regional cluster, per mode,
// and the per-child waypoint Gateway that ambient traffic to a child is
// scoped through. It is pure: it reads no cluster.
package mesh

import (
	"fmt"
	"maps"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/apiaryhq/apiary/internal/naming"
)

// Mode is how the mesh enrols workspace namespaces.
type Mode string

const (
	// Ambient enrols namespaces in Istio's ambient data plane (ztunnel, no
	// sidecars), the default.
	Ambient Mode = "ambient"
	// Sidecar enrols namespaces for sidecar injection.
	Sidecar Mode = "sidecar"
	// None stamps no enrolment label: the mesh enrols namespaces some other
	// way, or there is none.
	None Mode = "none"
)

// Modes are the valid modes.
var Modes = []Mode{Ambient, Sidecar, None}

// DefaultWaypointNamespace holds the waypoint Gateways unless configured.
const DefaultWaypointNamespace = "istio-system"

// Labels Istio reads on namespaces and Services.
const (
	// DataplaneModeLabel enrols a namespace in the ambient data plane.
	DataplaneModeLabel = "istio.io/dataplane-mode"
	// UseWaypointLabel names the waypoint a namespace's traffic goes through.
	UseWaypointLabel = "istio.io/use-waypoint"
	// UseWaypointNamespaceLabel is the namespace of that waypoint.
	UseWaypointNamespaceLabel = "istio.io/use-waypoint-namespace"
	// IngressUseWaypointLabel makes ingress gateways send traffic through the waypoint.
	IngressUseWaypointLabel = "istio.io/ingress-use-waypoint"
	// InjectionLabel enables sidecar injection in a namespace.
	InjectionLabel = "istio-injection"
	// GlobalLabel makes a Service an ambient multi-cluster "global" Service;
	// both the child's Service and its mirror on the regional cluster need it.
	GlobalLabel = "istio.io/global"
)

// keys are every namespace label a mode may stamp: those a namespace
// carries and its mode does not want are stale.
var keys = []string{DataplaneModeLabel, UseWaypointLabel, UseWaypointNamespaceLabel, IngressUseWaypointLabel, InjectionLabel}

// ParseMode parses a mode, refusing values the operator would silently take
// for none.
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes {
		if s == string(m) {
			return m, nil
		}
	}
	names := make([]string, len(Modes))
	for i, m := range Modes {
		names[i] = string(m)
	}
	return "", fmt.Errorf("unknown mesh mode %q: want one of %s", s, strings.Join(names, ", "))
}

// Config is the manager's mesh configuration. Its zero value enrols
// namespaces in ambient mode without waypoints.
type Config struct {
	// Mode is how namespaces are enrolled; Ambient when empty.
	Mode Mode
	// Waypoints routes each child's ambient traffic through its waypoint
	// Gateway <cd>-waypoint, which must exist and be programmed on the
	// regional and the child cluster. Only ambient mode has waypoints.
	Waypoints bool
	// WaypointNamespace holds the waypoint Gateways on both clusters;
	// DefaultWaypointNamespace when empty.
	WaypointNamespace string
}

// Validate reports a mode or waypoint namespace that cannot be used.
func (c Config) Validate() error {
	if c.Mode != "" {
		if _, err := ParseMode(string(c.Mode)); err != nil {
			return err
		}
	}
	if ns := c.WaypointNamespace; ns != "" && len(validation.IsDNS1123Label(ns)) > 0 {
		return fmt.Errorf("waypoint namespace %q is not a valid namespace name", ns)
	}
	return nil
}

// EffectiveMode is the configured mode, Ambient when empty.
func (c Config) EffectiveMode() Mode {
	if c.Mode == "" {
		return Ambient
	}
	return c.Mode
}

// UsesWaypoints reports whether workspaces go through per-child waypoints.
func (c Config) UsesWaypoints() bool { return c.Waypoints && c.EffectiveMode() == Ambient }

// Waypoint is the waypoint Gateway of the child of ClusterDeployment cd, in
// the waypoint namespace of both the regional and the child cluster.
func (c Config) Waypoint(cd string) types.NamespacedName {
	ns := c.WaypointNamespace
	if ns == "" {
		ns = DefaultWaypointNamespace
	}
	return types.NamespacedName{Namespace: ns, Name: naming.WaypointName(cd)}
}

// ChildLabels are the mesh labels of a workspace's namespace on the child
// of ClusterDeployment cd: ambient enrolment and, with waypoints, the
// child's waypoint; sidecar injection; or none.
func (c Config) ChildLabels(cd string) map[string]string {
	switch c.EffectiveMode() {
	case Ambient:
		labels := map[string]string{DataplaneModeLabel: string(Ambient)}
		if c.UsesWaypoints() {
			wp := c.Waypoint(cd)
			labels[UseWaypointLabel] = wp.Name
			labels[UseWaypointNamespaceLabel] = wp.Namespace
			labels[IngressUseWaypointLabel] = "true"
		}
		return labels
	case Sidecar:
		return map[string]string{InjectionLabel: "enabled"}
	}
	return map[string]string{}
}

// MirrorLabels are the mesh labels of a workspace's mirror namespace on the
// regional cluster: the enrolment label only, never waypoint labels (the
// operator removed them in v0.11.1: the mirror holds no pods, and a waypoint
// there breaks the regional side of the route).
func (c Config) MirrorLabels() map[string]string {
	labels := c.ChildLabels("")
	for _, k := range []string{UseWaypointLabel, UseWaypointNamespaceLabel, IngressUseWaypointLabel} {
		delete(labels, k)
	}
	return labels
}

// Relabel returns labels with every label of want set and the mesh labels
// that want lacks (those of another mode, or of waypoints turned off)
// removed, leaving other labels alone, and whether anything changed.
// labels is not modified.
func Relabel(labels, want map[string]string) (map[string]string, bool) {
	out := maps.Clone(labels)
	if out == nil {
		out = map[string]string{}
	}
	changed := false
	for k, v := range want {
		if old, had := out[k]; !had || old != v {
			out[k] = v
			changed = true
		}
	}
	for _, k := range keys {
		if _, wanted := want[k]; !wanted {
			if _, had := out[k]; had {
				delete(out, k)
				changed = true
			}
		}
	}
	return out, changed
}
