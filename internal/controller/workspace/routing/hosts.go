package routing

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/access"
	"github.com/apiaryhq/apiary/internal/delivery"
	routesink "github.com/apiaryhq/apiary/internal/delivery/routes"
	"github.com/apiaryhq/apiary/internal/naming"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
)

// A host name on a tenant Gateway is held by one workspace (HostLedger);
// another that needs it waits with HostNameTaken until the holder goes.
// The record of who holds which host is:
//   - the statuses of the workspaces routed to the regional cluster
//     (status.routes.hosts), read from the cache at every reconcile, free;
//   - in direct mode, the regional cluster's HTTPRoutes, listed only when
//     the workspace needs a host it does not hold yet, so that a steady
//     workspace costs no request. A claim is made by creating the route:
//     after delivering a new host, the routes are listed again, and of two
//     workspaces whose routes now hold it the younger backs off (deletes
//     its route and waits).
//   - in Git mode the routes reach the cluster only once Flux applies
//     them: the statuses and the ledger are the record.
//
// Shards of Apiary, each with a ledger of its own, may share a regional
// cluster. The window left: two shards that claim one host at once, each
// listing the routes before the other's route exists, and the older one
// creating its route after the younger one listed them again. Both routes
// then hold the host until the younger workspace reconciles again, which
// the older one's status write causes (waitHostRival): the younger sees
// the older's status claim and backs off. In Git mode the same holds with
// the statuses alone, each side's commit applied by Flux in between.

// claimHosts claims the host names of the workspace's HTTP endpoints on the
// tenant Gateway. It returns the hosts another holds, each with its holder,
// and those it claimed anew after listing the regional cluster's
// HTTPRoutes (to check again once delivered).
func (r *Router) claimHosts(ctx context.Context, obj *workspacesv1.WorkspaceDeployment, v *regionalView,
	wanted []string) (map[string]string, []string, *routeBlock) {
	self := claimant(obj)
	claims, err := r.statusHostClaims(ctx, obj, v)
	if err != nil {
		return nil, nil, routingError("%s", err)
	}
	known := map[string]bool{}
	for _, h := range r.Hosts.Held(v.poolKey(), self.Key) {
		known[h] = true
	}
	for _, c := range claims {
		if c.Holder.Key == self.Key {
			known[c.Host] = true
		}
	}
	var fresh []string
	for _, h := range wanted {
		if !known[h] {
			fresh = append(fresh, h)
		}
	}
	var taken map[string]string
	listed := len(fresh) > 0 && r.readsRoutes()
	if listed {
		own, t, err := r.routeHostClaims(ctx, v)
		if err != nil {
			return nil, nil, routingError("%s", err)
		}
		claims, taken = append(claims, own...), t
	}
	held := r.Hosts.Claim(v.poolKey(), access.HostRequest{Holder: self, Hosts: wanted, Claims: claims, Taken: taken, Live: r.live(ctx)})
	if !listed {
		return held, nil, nil
	}
	var claimed []string
	for _, h := range fresh {
		if held[h] == "" {
			claimed = append(claimed, h)
		}
	}
	return held, claimed, nil
}

// recheckHosts lists the regional cluster's HTTPRoutes again once the
// routes of hosts claimed anew are delivered: where another workspace's
// route holds one of them too, the older workspace keeps it. It returns
// the hosts the workspace yields, with their holders.
func (r *Router) recheckHosts(ctx context.Context, obj *workspacesv1.WorkspaceDeployment, v *regionalView,
	wanted []string) (map[string]string, error) {
	claims, err := r.statusHostClaims(ctx, obj, v)
	if err != nil {
		return nil, err
	}
	routes, taken, err := r.routeHostClaims(ctx, v)
	if err != nil {
		return nil, err
	}
	return r.Hosts.Claim(v.poolKey(), access.HostRequest{Holder: claimant(obj), Hosts: wanted,
		Claims: append(claims, routes...), Taken: taken, Live: r.live(ctx)}), nil
}

// readsRoutes reports whether the routes of regional clusters are read
// back from them: not in Git mode, where Flux applies them later.
func (r *Router) readsRoutes() bool {
	_, git := r.Sinks.(*routesink.Git)
	return !git
}

// live reports whether a workspace exists, from the cache; a workspace that
// cannot be read counts as existing.
func (r *Router) live(ctx context.Context) func(types.NamespacedName) bool {
	return func(k types.NamespacedName) bool {
		return !apierrors.IsNotFound(r.Get(ctx, k, &workspacesv1.WorkspaceDeployment{}))
	}
}

func claimant(w *workspacesv1.WorkspaceDeployment) access.Claimant {
	return access.Claimant{Key: client.ObjectKeyFromObject(w), Created: w.CreationTimestamp.Time, UID: w.UID}
}

// statusHostClaims returns the host names the workspaces of a regional
// cluster record on their status for its tenant Gateway, this one's first,
// from the cache. A status written before Apiary recorded host names tells
// them by the URLs of its HTTP endpoints.
func (r *Router) statusHostClaims(ctx context.Context, obj *workspacesv1.WorkspaceDeployment, v *regionalView) ([]access.HostClaim, error) {
	records, err := r.gatewayRecords(ctx, obj, v)
	if err != nil {
		return nil, err
	}
	var claims []access.HostClaim
	for _, w := range records {
		hosts := w.Status.Routes.Hosts
		if len(hosts) == 0 {
			for _, e := range w.Status.Access {
				if h := access.HostOf(e.URL); h != "" && e.Protocol == workspacesv1.AccessProtocolHTTP {
					hosts = append(hosts, h)
				}
			}
		}
		for _, h := range hosts {
			claims = append(claims, access.HostClaim{Holder: claimant(w), Host: h})
		}
	}
	return claims, nil
}

// routeHostClaims lists the HTTPRoutes of the regional cluster attached to
// the tenant Gateway: a route Apiary delivered for a workspace is that
// workspace's claim of its host names; a route of another writer, or one
// whose workspace the cache does not hold (gone, its route left for the
// sweeper; or too new), takes its host names, as the Gateway would merge
// it with a new route for them. One request.
func (r *Router) routeHostClaims(ctx context.Context, v *regionalView) ([]access.HostClaim, map[string]string, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(access.HTTPRouteGVK.GroupVersion().WithKind("HTTPRouteList"))
	if err := v.client.List(ctx, list); err != nil {
		return nil, nil, fmt.Errorf("listing HTTPRoutes on regional cluster %s: %w", v.cluster, err)
	}
	taken := map[string]string{}
	var claims []access.HostClaim
	holders := map[types.NamespacedName]*workspacesv1.WorkspaceDeployment{}
	for i := range list.Items {
		route := &list.Items[i]
		if !attached(route, v.gateway) {
			continue
		}
		hosts, _, _ := unstructured.NestedStringSlice(route.Object, "spec", "hostnames")
		key, ours := routeWorkspace(route)
		var w *workspacesv1.WorkspaceDeployment
		if ours {
			var seen bool
			if w, seen = holders[key]; !seen {
				w = &workspacesv1.WorkspaceDeployment{}
				if err := r.Get(ctx, key, w); err != nil {
					w = nil
				}
				holders[key] = w
			}
		}
		for _, h := range hosts {
			h = strings.ToLower(h)
			switch {
			case strings.HasPrefix(h, "*."):
				// A wildcard yields to any exact host name.
			case w != nil:
				claims = append(claims, access.HostClaim{Holder: claimant(w), Host: h})
			default:
				taken[h] = "HTTPRoute " + route.GetNamespace() + "/" + route.GetName()
			}
		}
	}
	return claims, taken, nil
}

// attached reports whether a route has the Gateway gw among its parents.
func attached(route *unstructured.Unstructured, gw types.NamespacedName) bool {
	return len(gatewaySections(route, gw)) > 0
}

// gatewaySections returns the sectionName of each of a route's parentRefs
// that names the Gateway gw ("" for a ref naming no section). A ref's kind
// defaults to Gateway and its namespace to the route's.
func gatewaySections(route *unstructured.Unstructured, gw types.NamespacedName) []string {
	parents, _, _ := unstructured.NestedSlice(route.Object, "spec", "parentRefs")
	var out []string
	for _, p := range parents {
		ref, ok := p.(map[string]any)
		if !ok {
			continue
		}
		kind, _ := ref["kind"].(string)
		name, _ := ref["name"].(string)
		ns, _ := ref["namespace"].(string)
		section, _ := ref["sectionName"].(string)
		if ns == "" {
			ns = route.GetNamespace()
		}
		if (kind == "" || kind == "Gateway") && name == gw.Name && ns == gw.Namespace {
			out = append(out, section)
		}
	}
	return out
}

// routeWorkspace names the workspace a route was delivered for, by its
// owner labels; false for a route of another writer. The route must lie in
// the workspace's namespace ws-<name>.
func routeWorkspace(route *unstructured.Unstructured) (types.NamespacedName, bool) {
	labels := route.GetLabels()
	ns, name := labels[delivery.LabelOwnerNamespace], labels[delivery.LabelOwnerName]
	if labels[delivery.LabelOwnerKind] != naming.LabelValue(routesink.OwnerKind) || ns == "" || name == "" ||
		route.GetNamespace() != plan.ChildNamespace(name) {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: ns, Name: name}, true
}
