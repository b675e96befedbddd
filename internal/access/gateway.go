// Package access derives how a workspace's access endpoints are reached
// through the tenant Gateway of its regional cluster, as the exalsius
// operator does (ADR-0001): the tenant domain and scheme from the Gateway's
// wildcard listener, host names and URLs per endpoint, the port pool of the
// Gateway's TCP listeners and the ledger that hands its ports out, the
// ledger that gives each host name to one workspace, and the input of the
// workspace-routes bundle. It is pure: it reads no cluster.
package access

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Labels of k0rdent's KOF that tie a child cluster to its regional cluster.
const (
	// RegionalClusterNameLabel, on a child's ClusterDeployment, names its regional cluster.
	RegionalClusterNameLabel = "k0rdent.mirantis.com/kof-regional-cluster-name"
	// ClusterNameLabel, on a regional ClusterDeployment, is the name children refer to.
	ClusterNameLabel = "k0rdent.mirantis.com/kof-cluster-name"
	// ClusterRoleLabel holds a KOF cluster's role; RoleRegional marks a regional cluster.
	ClusterRoleLabel = "k0rdent.mirantis.com/kof-cluster-role"
	// RoleRegional is the ClusterRoleLabel value of a regional cluster.
	RoleRegional = "regional"
)

// Defaults of the tenant Gateway, as the exalsius operator's flags.
const (
	DefaultGatewayName      = "istio-ingressgateway"
	DefaultGatewayNamespace = "istio-system"
)

// ErrInfraNotReady marks a problem of the routing infrastructure that an
// administrator fixes (no regional cluster, no Gateway, Gateway not
// programmed, no wildcard listener). It never fails a workspace.
var ErrInfraNotReady = errors.New("routing infrastructure not ready")

// infraError is a problem of the routing infrastructure: it is
// ErrInfraNotReady (errors.Is), and its message says what the problem is.
type infraError string

func (e infraError) Error() string        { return string(e) }
func (e infraError) Is(target error) bool { return target == ErrInfraNotReady }

func infraErrorf(format string, args ...any) error { return infraError(fmt.Sprintf(format, args...)) }

// Listener is one TCP listener of the tenant Gateway: one port of the pool.
type Listener struct {
	// Name of the listener, the sectionName a TCPRoute attaches to.
	Name string
	// Port the listener accepts connections on.
	Port int32
}

// Tenant is what the tenant Gateway says about a tenant's access.
type Tenant struct {
	// Domain is the tenant domain, from the wildcard listener's host name.
	Domain string
	// Scheme is https for a wildcard HTTPS listener, http for an HTTP one.
	Scheme string
	// Pool is the Gateway's TCP listeners, sorted by port.
	Pool []Listener
}

// ReadGateway checks that the tenant Gateway is programmed and reads the
// tenant domain and scheme from the first HTTPS listener with a wildcard
// host name ("*.<domain>"), else the first such HTTP listener, and the port
// pool from its TCP listeners. Problems wrap ErrInfraNotReady.
func ReadGateway(gw *gatewayv1.Gateway) (Tenant, error) {
	name := gw.Namespace + "/" + gw.Name
	if why := NotProgrammed(gw); why != "" {
		return Tenant{}, infraErrorf("Gateway %s is not programmed: %s", name, why)
	}
	t := Tenant{Pool: Pool(gw.Spec.Listeners)}
	for _, want := range []struct {
		protocol gatewayv1.ProtocolType
		scheme   string
	}{{gatewayv1.HTTPSProtocolType, "https"}, {gatewayv1.HTTPProtocolType, "http"}} {
		for _, l := range gw.Spec.Listeners {
			if l.Protocol != want.protocol || l.Hostname == nil {
				continue
			}
			if d, ok := wildcardDomain(string(*l.Hostname)); ok {
				t.Domain, t.Scheme = d, want.scheme
				return t, nil
			}
		}
	}
	return Tenant{}, infraErrorf("Gateway %s has no HTTPS or HTTP listener with a wildcard host name (*.<tenant domain>) to take the tenant domain from",
		name)
}

// NotProgrammed says why a Gateway is not Programmed=True (a tenant Gateway
// or a waypoint); empty when it is.
func NotProgrammed(gw *gatewayv1.Gateway) string {
	c := findCondition(gw.Status.Conditions, string(gatewayv1.GatewayConditionProgrammed))
	switch {
	case c == nil:
		return "it has no Programmed condition yet"
	case c.Status == metav1.ConditionTrue:
		return ""
	case c.Message != "":
		return fmt.Sprintf("Programmed is %s: %s", c.Status, c.Message)
	}
	return fmt.Sprintf("Programmed is %s", c.Status)
}

// wildcardDomain returns d for a host name "*.d" where d is a DNS subdomain.
func wildcardDomain(host string) (string, bool) {
	d, ok := strings.CutPrefix(strings.ToLower(host), "*.")
	if !ok || strings.Contains(d, "*") || len(validation.IsDNS1123Subdomain(d)) > 0 {
		return "", false
	}
	return d, true
}

// Pool returns the TCP listeners of a Gateway, sorted by port then name.
// Listeners without a port are left out.
func Pool(listeners []gatewayv1.Listener) []Listener {
	var out []Listener
	for _, l := range listeners {
		if l.Protocol == gatewayv1.TCPProtocolType && l.Port > 0 && l.Name != "" {
			out = append(out, Listener{Name: string(l.Name), Port: int32(l.Port)})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Port != out[j].Port {
			return out[i].Port < out[j].Port
		}
		return out[i].Name < out[j].Name
	})
	return out
}

func findCondition(cs []metav1.Condition, t string) *metav1.Condition {
	for i := range cs {
		if cs[i].Type == t {
			return &cs[i]
		}
	}
	return nil
}

// RouteReady reads a route's status for its parent Gateway gw
// (namespace/name): ready once the Gateway reports Accepted and
// ResolvedRefs True. Otherwise it says what the route waits for.
func RouteReady(status gatewayv1.RouteStatus, routeNamespace, gwNamespace, gwName string) (bool, string) {
	for _, p := range status.Parents {
		ns := routeNamespace
		if p.ParentRef.Namespace != nil {
			ns = string(*p.ParentRef.Namespace)
		}
		if string(p.ParentRef.Name) != gwName || ns != gwNamespace {
			continue
		}
		for _, t := range []gatewayv1.RouteConditionType{gatewayv1.RouteConditionAccepted, gatewayv1.RouteConditionResolvedRefs} {
			c := findCondition(p.Conditions, string(t))
			switch {
			case c == nil:
				return false, "waiting for the gateway to accept the route"
			case c.Status != metav1.ConditionTrue:
				msg := fmt.Sprintf("the gateway reports %s=%s (%s)", t, c.Status, c.Reason)
				if c.Message != "" {
					msg += ": " + c.Message
				}
				return false, msg
			}
		}
		return true, ""
	}
	return false, "waiting for the gateway to accept the route"
}
