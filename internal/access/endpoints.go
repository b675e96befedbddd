package access

import (
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// Route is how one access endpoint is published. An endpoint that cannot be
// published has a Problem and no URL.
type Route struct {
	// Endpoint is the class's access endpoint.
	Endpoint workspacesv1.AccessEndpoint
	// ServiceName is the Service on the child, mirrored on the regional cluster.
	ServiceName string
	// Hostname is the host name of an HTTP endpoint.
	Hostname string
	// Listener is the pool port of a TCP or SSH endpoint.
	Listener Listener
	// URL users reach the endpoint at.
	URL string
	// Problem says why the endpoint is not published; empty when it is.
	Problem string
	// Exhausted is set when the Problem is that the port pool is full.
	Exhausted bool
	// HostTaken is set when the Problem is that another holds the host name.
	HostTaken bool
	// Infra is set when the Problem is the routing infrastructure's: no
	// pool, or a route kind the regional cluster does not serve.
	Infra bool
}

// Routable reports whether the route can be delivered.
func (r Route) Routable() bool { return r.Problem == "" }

// IsTCP reports whether an endpoint is routed by port (TCP or SSH).
func IsTCP(ep workspacesv1.AccessEndpoint) bool {
	return ep.Protocol == workspacesv1.AccessProtocolTCP || ep.Protocol == workspacesv1.AccessProtocolSSH
}

// TCPEndpoints returns the names of the TCP and SSH endpoints, in order.
func TCPEndpoints(endpoints []workspacesv1.AccessEndpoint) []string {
	var out []string
	for _, ep := range endpoints {
		if IsTCP(ep) {
			out = append(out, ep.Name)
		}
	}
	return out
}

// PlanInput is what Plan derives the routes of a workspace from.
type PlanInput struct {
	// Workspace is the workspace's name, the first label of its host names.
	Workspace string
	// Release is the workspace's Helm release; conventional Service names
	// are <release>-<endpoint>.
	Release string
	// Endpoints are the class's access endpoints, in order.
	Endpoints []workspacesv1.AccessEndpoint
	// Tenant is what the tenant Gateway says.
	Tenant Tenant
	// Gateway names the tenant Gateway (namespace/name) in messages.
	Gateway string
	// Ports are the pool ports assigned to TCP and SSH endpoints, by name.
	Ports map[string]Listener
	// NoHTTPRoutes and NoTCPRoutes, when set, say why HTTPRoutes or
	// TCPRoutes cannot be made on the regional cluster.
	NoHTTPRoutes, NoTCPRoutes string
	// HostsHeld names, by host name, the holder of the hosts another holds
	// (HostLedger.Claim): their endpoints wait.
	HostsHeld map[string]string
}

// Plan derives each endpoint's route, in the endpoints' order: the first
// HTTP endpoint at <scheme>://<workspace>.<domain>, further ones at
// <scheme>://<workspace>-<endpoint>.<domain>, TCP and SSH endpoints at
// tcp:// or ssh://<domain>:<pool port>. Endpoints that cannot be routed
// (name too long, host name or port held by another, no route kind) carry
// a Problem; the others are unaffected.
func Plan(in PlanInput) []Route {
	out := make([]Route, 0, len(in.Endpoints))
	primary := true
	for _, ep := range in.Endpoints {
		r := Route{Endpoint: ep}
		svc, err := ServiceName(in.Release, ep)
		r.ServiceName = svc
		switch {
		case err != nil:
			r.Problem = err.Error()
		case ep.Protocol == workspacesv1.AccessProtocolHTTP:
			host, err := Hostname(in.Workspace, ep.Name, primary, in.Tenant.Domain)
			primary = false
			switch {
			case err != nil:
				r.Problem = err.Error()
			case in.NoHTTPRoutes != "":
				r.Problem, r.Infra = in.NoHTTPRoutes, true
			case in.HostsHeld[host] != "":
				r.Problem, r.HostTaken = HeldBy(host, in.HostsHeld[host]), true
			default:
				r.Hostname, r.URL = host, in.Tenant.Scheme+"://"+host
			}
		case IsTCP(ep):
			l, ok := in.Ports[ep.Name]
			switch {
			case in.NoTCPRoutes != "":
				r.Problem, r.Infra = in.NoTCPRoutes, true
			case len(in.Tenant.Pool) == 0:
				r.Problem, r.Infra = fmt.Sprintf("Gateway %s has no TCP listeners (the port pool); ask an administrator to add some", in.Gateway), true
			case !ok:
				r.Problem = fmt.Sprintf("port pool exhausted: all %d TCP listeners of Gateway %s are in use; ask an administrator to widen the pool",
					len(in.Tenant.Pool), in.Gateway)
				r.Exhausted = true
			default:
				r.Listener = l
				r.URL = strings.ToLower(string(ep.Protocol)) + "://" + in.Tenant.Domain + ":" + strconv.Itoa(int(l.Port))
			}
		default:
			r.Problem = fmt.Sprintf("protocol %q cannot be routed", ep.Protocol)
		}
		out = append(out, r)
	}
	return out
}

// ServiceName is the Service an endpoint reaches: its serviceName, else
// <release>-<endpoint>. A name longer than a DNS label is an error.
func ServiceName(release string, ep workspacesv1.AccessEndpoint) (string, error) {
	name := ep.ServiceName
	if name == "" {
		name = release + "-" + ep.Name
	}
	if len(validation.IsDNS1123Label(name)) > 0 {
		return name, fmt.Errorf("service name %q of endpoint %q is not a DNS label of at most 63 characters; set serviceName on the endpoint", name, ep.Name)
	}
	return name, nil
}

// Hostname is the host name of an HTTP endpoint: <workspace>.<domain> for
// the primary (first HTTP) endpoint, <workspace>-<endpoint>.<domain> for
// the others. A first label longer than 63 characters, or a host name that
// is not a DNS subdomain, is an error.
func Hostname(workspace, endpoint string, primary bool, domain string) (string, error) {
	label := workspace
	if !primary {
		label = workspace + "-" + endpoint
	}
	if errs := validation.IsDNS1123Label(label); len(errs) > 0 {
		return "", fmt.Errorf("host name label %q of endpoint %q is not a DNS label of at most 63 characters", label, endpoint)
	}
	host := label + "." + domain
	if errs := validation.IsDNS1123Subdomain(host); len(errs) > 0 {
		return "", fmt.Errorf("host name %q of endpoint %q is invalid: %s", host, endpoint, strings.Join(errs, "; "))
	}
	return host, nil
}
