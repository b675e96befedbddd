package routing

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/fluxcd/pkg/runtime/jitter"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/access"
	"github.com/apiaryhq/apiary/internal/controller/reconciler"
	"github.com/apiaryhq/apiary/internal/delivery"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
)

// Route publishes a Running workspace's access endpoints on the
// tenant Gateway of its regional cluster: HTTPRoutes by host name,
// TCPRoutes on ports of the Gateway's pool, and the mirror Services they
// point at, rendered by the workspace-routes bundle and delivered by the
// regional cluster's route sink. It fills status.access and RoutesReady.
// Routing never changes the phase: problems are reported on the condition
// and looked at again later, never returned as errors. The tenant Gateway
// and, with waypoints, the waypoint Gateways are read from watched caches
// of the regional and child clusters, whose changes wake the workspace: a
// workspace whose routes are ready and unchanged costs no request.
func (r *Router) Route(ctx context.Context, w *Target) time.Duration {
	obj := w.Obj
	if r.Children == nil || r.Sinks == nil {
		return 0 // routing is not set up
	}
	// The Gateway watches this workspace holds: none but those it uses now.
	var watching []types.NamespacedName
	defer func() { r.Children.ReleaseElsewhere(WatchOwner(obj), watching...) }()
	endpoints := w.Class.Spec.AccessEndpoints
	if len(endpoints) == 0 {
		if _, err := r.Drop(ctx, obj); err != nil {
			return r.routesBlocked(obj, endpoints, routingError("removing the routes of endpoints the class no longer has: %s", err))
		}
		obj.Status.Access = nil
		conditions.Delete(obj, workspacesv1.RoutesReadyCondition)
		return 0
	}
	// Routes follow their infrastructure, ready or not: the workspace's
	// cluster (its waypoint, which regional cluster it has) and the
	// regional cluster (its tenant Gateway).
	w.follow(w.CDKey)
	key, block := r.regionalCluster(ctx, w.CD)
	if rs := obj.Status.Routes; rs != nil && rs.Cluster != "" && (block == nil && rs.Cluster != key.String() ||
		block != nil && block.reason == workspacesv1.RoutingInfraNotReadyReason) {
		// The workspace's cluster has another regional cluster, or none.
		if _, err := r.Drop(ctx, obj); err != nil {
			return r.routesBlocked(obj, endpoints, routingError("removing the routes from regional cluster %s: %s", rs.Cluster, err))
		}
	}
	if block != nil {
		return r.routesBlocked(obj, endpoints, block)
	}
	watching = append(watching, key)
	w.follow(key)
	v, block := r.regional(ctx, obj, key, endpoints)
	if block != nil {
		return r.routesBlocked(obj, endpoints, block)
	}
	if r.Mesh.UsesWaypoints() {
		watching = append(watching, w.CDKey)
		if block := r.waypoints(ctx, w, v); block != nil {
			return r.routesBlocked(obj, endpoints, block)
		}
	}
	ports, block := r.assignPorts(ctx, obj, endpoints, v)
	if block != nil {
		return r.routesBlocked(obj, endpoints, block)
	}
	in := access.PlanInput{
		Workspace: obj.Name, Release: plan.ReleaseName(plan.ClusterKey(obj).Name, obj.Name), Endpoints: endpoints, Tenant: v.tenant,
		Gateway: v.gateway.String(), Ports: ports, NoHTTPRoutes: v.noHTTP, NoTCPRoutes: v.noTCP,
	}
	wanted := hostnames(access.Plan(in))
	held, claimed, block := r.claimHosts(ctx, obj, v, wanted)
	if block != nil {
		return r.routesBlocked(obj, endpoints, block)
	}
	in.HostsHeld = held
	routes, digest, applied, block, err := r.publish(ctx, obj, v, in)
	if err == nil && block == nil && applied && len(claimed) > 0 {
		// A host claimed anew is the workspace's once its route is there
		// and no older workspace's route holds it too.
		if now, recheckErr := r.recheckHosts(ctx, obj, v, wanted); recheckErr != nil {
			block = routingError("%s", recheckErr)
		} else if yields(claimed, now) {
			in.HostsHeld = now
			var again bool
			routes, digest, again, block, err = r.publish(ctx, obj, v, in)
			applied = applied || again
		}
	}
	if err != nil {
		return r.routesBlocked(obj, endpoints, &routeBlock{reason: workspacesv1.RoutingErrorReason,
			message: fmt.Sprintf("rendering the routes: %s", err), requeue: routeInfraResync})
	}
	for _, rt := range routes {
		w.AwaitingPort = w.AwaitingPort || rt.Exhausted
		w.AwaitingHost = w.AwaitingHost || rt.HostTaken
	}
	w.Hosts = obj.Status.Routes.Hosts
	if block == nil && (applied || !conditions.IsTrue(obj, workspacesv1.RoutesReadyCondition)) {
		block = r.markServicesGlobal(ctx, w, routes)
	}
	if block == nil {
		if wait := r.routesAwaitFlux(ctx, obj, v, digest); wait != "" {
			w.AwaitingSync = true
			return r.routesAwaiting(obj, routes, wait)
		}
	}
	entries, readBlock := r.accessEntries(ctx, obj, v, routes, applied)
	if block == nil {
		block = readBlock
	}
	obj.Status.Access = entries
	wait := markRoutes(obj, routes, entries, block)
	if wait > 0 {
		return jitter.JitteredIntervalDuration(wait)
	}
	return 0
}

// publish plans the routes, records them on the status, renders and
// delivers them; it returns the routes, the digest of what it rendered,
// whether it delivered, and an error when the routes cannot be rendered.
func (r *Router) publish(ctx context.Context, obj *workspacesv1.WorkspaceDeployment, v *regionalView,
	in access.PlanInput) ([]access.Route, string, bool, *routeBlock, error) {
	routes := access.Plan(in)
	recordRoutes(obj, v, routes)
	objs, digest, err := r.renderRoutes(ctx, obj, v, routes)
	if err != nil {
		return routes, "", false, nil, err
	}
	applied, block := r.deliverRoutes(ctx, obj, v, objs, digest)
	return routes, digest, applied, block, nil
}

// yields reports whether another holds one of the hosts claimed.
func yields(claimed []string, held map[string]string) bool {
	for _, h := range claimed {
		if held[h] != "" {
			return true
		}
	}
	return false
}

// hostnames are the host names of the routable HTTP routes.
func hostnames(routes []access.Route) []string {
	var out []string
	for _, rt := range routes {
		if rt.Routable() && rt.Hostname != "" {
			out = append(out, rt.Hostname)
		}
	}
	return out
}

// routesBlocked reports that no endpoint can be published now.
func (r *Router) routesBlocked(obj *workspacesv1.WorkspaceDeployment, endpoints []workspacesv1.AccessEndpoint, b *routeBlock) time.Duration {
	entries := make([]workspacesv1.AccessEntry, 0, len(endpoints))
	for _, ep := range endpoints {
		entries = append(entries, workspacesv1.AccessEntry{Name: ep.Name, Protocol: ep.Protocol, Message: b.message})
	}
	obj.Status.Access = entries
	conditions.MarkFalse(obj, workspacesv1.RoutesReadyCondition, b.reason, "%s", b.message)
	return jitter.JitteredIntervalDuration(b.requeue)
}

// recordRoutes records the regional cluster, Gateway, host names and pool
// ports of the workspace's routes on its status.
func recordRoutes(obj *workspacesv1.WorkspaceDeployment, v *regionalView, routes []access.Route) {
	if obj.Status.Routes == nil {
		obj.Status.Routes = &workspacesv1.WorkspaceRoutesStatus{}
	}
	rs := obj.Status.Routes
	rs.Cluster, rs.Gateway = v.cluster.String(), v.gateway.String()
	rs.Ports = nil
	rs.Hosts = hostnames(routes)
	for _, rt := range routes {
		if rt.Routable() && access.IsTCP(rt.Endpoint) {
			rs.Ports = append(rs.Ports, workspacesv1.PortAssignment{Endpoint: rt.Endpoint.Name, Listener: rt.Listener.Name, Port: rt.Listener.Port})
		}
	}
}

// renderRoutes renders the workspace-routes bundle (built in, or the one
// of the manager's bundle directory).
func (r *Router) renderRoutes(ctx context.Context, obj *workspacesv1.WorkspaceDeployment, v *regionalView, routes []access.Route) ([]*unstructured.Unstructured, string, error) {
	bundle, err := r.Bundles.Get(access.RoutesBundle)
	if err != nil {
		return nil, "", err
	}
	in := access.RoutesInput{
		Workspace: client.ObjectKeyFromObject(obj), UID: string(obj.UID), Namespace: plan.ChildNamespace(obj.Name),
		Gateway: v.gateway, Labels: plan.NamespaceLabels(obj), NamespaceLabels: r.Mesh.MirrorLabels(),
		Routes: routes, Operator: r.Settings,
	}
	if v.tcpVersion != "" {
		in.TCPRouteAPIVersion = access.GatewayGroup + "/" + v.tcpVersion
	}
	out, err := bundle.RenderContext(ctx, in.Request())
	if err != nil {
		return nil, "", err
	}
	return out.Objects, out.Digest(), nil
}

// deliverRoutes hands the rendered routes to the regional cluster's sink
// when they differ from what was last delivered, and reports whether it did.
func (r *Router) deliverRoutes(ctx context.Context, obj *workspacesv1.WorkspaceDeployment, v *regionalView,
	objs []*unstructured.Unstructured, digest string) (bool, *routeBlock) {
	rs := obj.Status.Routes
	if rs.Delivery == nil {
		rs.Delivery = &commonv1.DeliveryStatus{}
	}
	d := rs.Delivery
	if d.Digest == digest && d.Inventory != nil {
		return false, nil
	}
	sink, err := r.Sinks.For(ctx, v.cluster)
	if err != nil {
		return false, routingError("%s", err)
	}
	d.Mode = sink.Mode()
	res, err := sink.Apply(ctx, Owner(obj), objs, d.Inventory)
	reconciler.RecordApply(d, res)
	if err != nil {
		d.Digest = ""
		return true, routingError("delivering the routes to regional cluster %s: %s", v.cluster, err)
	}
	// Changes waiting for a Git commit are handed over again until they are
	// committed, which tells their revision.
	if res == nil || !res.Pending {
		d.Digest = digest
	}
	return true, nil
}

// accessEntries reports each endpoint: its URL, and whether the Gateway
// accepted its route. When nothing was applied and every entry was ready,
// the entries are kept without reading the routes again.
func (r *Router) accessEntries(ctx context.Context, obj *workspacesv1.WorkspaceDeployment, v *regionalView,
	routes []access.Route, applied bool) ([]workspacesv1.AccessEntry, *routeBlock) {
	prev := map[string]workspacesv1.AccessEntry{}
	for _, e := range obj.Status.Access {
		prev[e.Name] = e
	}
	reuse := !applied && conditions.IsTrue(obj, workspacesv1.RoutesReadyCondition)
	for _, rt := range routes {
		p, ok := prev[rt.Endpoint.Name]
		reuse = reuse && rt.Routable() && ok && p.Ready && p.URL == rt.URL && p.Protocol == rt.Endpoint.Protocol
	}
	entries := make([]workspacesv1.AccessEntry, 0, len(routes))
	var block *routeBlock
	ns := plan.ChildNamespace(obj.Name)
	for _, rt := range routes {
		e := workspacesv1.AccessEntry{Name: rt.Endpoint.Name, Protocol: rt.Endpoint.Protocol, URL: rt.URL}
		switch {
		case reuse:
			e.Ready = true
		case !rt.Routable():
			e.Message = rt.Problem
		default:
			st, err := routeStatus(ctx, v, ns, rt)
			switch {
			case err != nil:
				e.Message = err.Error()
				block = routingError("%s", err)
			case st == nil && obj.Status.Routes.Delivery.Mode == delivery.ModeGit:
				e.Message = fmt.Sprintf("the route is missing on regional cluster %s although Flux applied its commit; Flux restores it at its next reconciliation", v.cluster)
			case st == nil:
				e.Message = fmt.Sprintf("the route is missing on regional cluster %s; it is applied again", v.cluster)
				obj.Status.Routes.Delivery.Digest = "" // deliver again on the next reconcile
			default:
				e.Ready, e.Message = access.RouteReady(*st, ns, v.gateway.Namespace, v.gateway.Name)
			}
		}
		entries = append(entries, e)
	}
	return entries, block
}

// markRoutes sets RoutesReady from the entries and returns when to look
// again: never once every endpoint is ready, soon while the Gateway has not
// accepted a new route yet (backing off), late when only an administrator,
// a freed port or a freed host name can help.
func markRoutes(obj *workspacesv1.WorkspaceDeployment, routes []access.Route, entries []workspacesv1.AccessEntry, block *routeBlock) time.Duration {
	var waiting []string
	reason, wait := "", time.Duration(0)
	rank := map[string]int{workspacesv1.RoutingInProgressReason: 1, workspacesv1.RoutingInfraNotReadyReason: 2,
		workspacesv1.PortPoolExhaustedReason: 3, workspacesv1.HostNameTakenReason: 4, workspacesv1.RoutingErrorReason: 5}
	worse := func(r string, d time.Duration) {
		if rank[r] > rank[reason] {
			reason = r
		}
		if wait == 0 || d < wait {
			wait = d
		}
	}
	since := time.Duration(0)
	if c := conditions.Get(obj, workspacesv1.RoutesReadyCondition); c != nil && c.Status == metav1.ConditionFalse {
		since = time.Since(c.LastTransitionTime.Time)
	}
	for i, e := range entries {
		if e.Ready {
			continue
		}
		waiting = append(waiting, e.Name+": "+e.Message)
		switch rt := routes[i]; {
		case rt.Exhausted:
			worse(workspacesv1.PortPoolExhaustedReason, routeInfraResync)
		case rt.HostTaken:
			worse(workspacesv1.HostNameTakenReason, routeInfraResync)
		case rt.Infra:
			worse(workspacesv1.RoutingInfraNotReadyReason, routeInfraResync)
		case !rt.Routable():
			worse(workspacesv1.RoutingErrorReason, routeInfraResync)
		default:
			worse(workspacesv1.RoutingInProgressReason, min(max(since/4, routePollMin), routePollMax))
		}
	}
	if block != nil {
		worse(block.reason, block.requeue)
		waiting = append([]string{block.message}, waiting...)
	}
	if reason == "" {
		conditions.MarkTrue(obj, workspacesv1.RoutesReadyCondition, workspacesv1.RoutesReadyReason, "All %d access endpoint(s) are routed", len(entries))
		return 0
	}
	conditions.MarkFalse(obj, workspacesv1.RoutesReadyCondition, reason, "%s", reconciler.Truncate(strings.Join(waiting, "; "), 1000))
	return wait
}
