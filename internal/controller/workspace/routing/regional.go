package routing

import (
	"context"
	"fmt"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/access"
	"github.com/apiaryhq/apiary/internal/childcluster"
	"github.com/apiaryhq/apiary/internal/delivery"
	routesink "github.com/apiaryhq/apiary/internal/delivery/routes"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
)

// Requeue intervals of the routing step. Routing never polls at steady
// state: a workspace whose routes are all ready is not requeued.
const (
	// routeInfraResync is how long a workspace waits to look again at routing
	// infrastructure that is missing (no regional cluster, Gateway not
	// programmed, pool exhausted); watches of ClusterDeployments and
	// workspaces wake it earlier.
	routeInfraResync = 5 * time.Minute
	// routeErrorResync is the wait after an error reaching the regional cluster.
	routeErrorResync = time.Minute
	// routePollMin and routePollMax bound the wait for a gateway to accept
	// new routes: a quarter of the time waited so far.
	routePollMin, routePollMax = 5 * time.Second, 5 * time.Minute
)

// routesOwner identifies a workspace's routes to the route sinks.
func Owner(obj *workspacesv1.WorkspaceDeployment) delivery.Owner {
	return delivery.Owner{Kind: routesink.OwnerKind, Namespace: obj.Namespace, Name: obj.Name, UID: obj.UID}
}

// routeBlock says why routes cannot be published now, with the condition
// reason to report and when to look again.
type routeBlock struct {
	reason  string
	message string
	requeue time.Duration
}

func infraNotReady(format string, args ...any) *routeBlock {
	return &routeBlock{reason: workspacesv1.RoutingInfraNotReadyReason, message: fmt.Sprintf(format, args...), requeue: routeInfraResync}
}

// watched is a block that a watch of the management cluster lifts (a
// ClusterDeployment's label, a regional ClusterDeployment): no requeue.
func watched(b *routeBlock) *routeBlock {
	b.requeue = 0
	return b
}

func routingError(format string, args ...any) *routeBlock {
	return &routeBlock{reason: workspacesv1.RoutingErrorReason, message: fmt.Sprintf(format, args...), requeue: routeErrorResync}
}

// regionalView is what the routing step knows of a workspace's regional
// cluster and its tenant Gateway.
type regionalView struct {
	cluster types.NamespacedName
	client  client.Client
	// cache holds the cluster's Gateways.
	cache   *childcluster.ClusterCache
	gateway types.NamespacedName
	tenant  access.Tenant
	// tcpVersion is the TCPRoute version served; noHTTP and noTCP say why
	// a route kind cannot be written.
	tcpVersion    string
	noHTTP, noTCP string
}

func (v *regionalView) poolKey() access.PoolKey {
	return access.PoolKey{Cluster: v.cluster, Gateway: v.gateway}
}

// regionalCluster finds the regional ClusterDeployment of a workspace's
// cluster, as KOF links them: the child's label
// k0rdent.mirantis.com/kof-regional-cluster-name=<R> names the
// ClusterDeployment of its namespace labelled
// k0rdent.mirantis.com/kof-cluster-name=<R>; with several, the first by name.
func (r *Router) regionalCluster(ctx context.Context, cd *k0rdentv1beta1.ClusterDeployment) (types.NamespacedName, *routeBlock) {
	name := cd.Labels[access.RegionalClusterNameLabel]
	if name == "" {
		return types.NamespacedName{}, watched(infraNotReady("ClusterDeployment %s/%s has no regional cluster (label %s): its workspaces cannot be reached from outside",
			cd.Namespace, cd.Name, access.RegionalClusterNameLabel))
	}
	list := &k0rdentv1beta1.ClusterDeploymentList{}
	if err := r.List(ctx, list, client.InNamespace(cd.Namespace), client.MatchingLabels{access.ClusterNameLabel: name}); err != nil {
		return types.NamespacedName{}, routingError("listing regional ClusterDeployments in %s: %s", cd.Namespace, err)
	}
	var names []string
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp.IsZero() {
			names = append(names, list.Items[i].Name)
		}
	}
	if len(names) == 0 {
		return types.NamespacedName{}, watched(infraNotReady("no regional ClusterDeployment labelled %s=%s in namespace %s",
			access.ClusterNameLabel, name, cd.Namespace))
	}
	sort.Strings(names)
	return types.NamespacedName{Namespace: cd.Namespace, Name: names[0]}, nil
}

// regional reaches a regional cluster and reads its tenant Gateway from the
// cluster's cache, which the workspace watches from now on.
func (r *Router) regional(ctx context.Context, obj *workspacesv1.WorkspaceDeployment, key types.NamespacedName,
	endpoints []workspacesv1.AccessEndpoint) (*regionalView, *routeBlock) {
	c, err := r.Children.Client(ctx, key)
	if err != nil {
		return nil, infraNotReady("cannot reach regional cluster %s: %s", key, err)
	}
	cc, err := r.Children.Watch(ctx, key, WatchOwner(obj), childcluster.WatchOptions{Gateways: true})
	if err != nil {
		return nil, infraNotReady("cannot reach regional cluster %s: %s", key, err)
	}
	v := &regionalView{cluster: key, client: c, cache: cc, gateway: r.gateway()}
	gw, block := cachedGateway(ctx, cc, v.gateway, "regional cluster "+key.String())
	if block != nil {
		return nil, block
	}
	if v.tenant, err = access.ReadGateway(gw); err != nil {
		return nil, watched(infraNotReady("regional cluster %s: %s", key, err))
	}
	// Route kinds are looked up only when the class needs them: a kind the
	// cluster does not serve costs a discovery request at each look.
	needHTTP, needTCP := false, false
	for _, ep := range endpoints {
		needHTTP = needHTTP || !access.IsTCP(ep)
		needTCP = needTCP || access.IsTCP(ep)
	}
	if needHTTP && !access.Served(c, access.HTTPRouteGVK.GroupKind(), access.HTTPRouteGVK.Version) {
		v.noHTTP = fmt.Sprintf("HTTPRoute (%s) is not served on regional cluster %s", access.HTTPRouteGVK.GroupVersion(), key)
	}
	if needTCP {
		if v.tcpVersion = access.ServedTCPRouteVersion(c); v.tcpVersion == "" {
			v.noTCP = fmt.Sprintf("TCPRoute support (Gateway API v1.5 standard channel, or the experimental channel) is not installed on regional cluster %s", key)
		}
	}
	return v, nil
}

// gateway is the tenant Gateway the manager was configured with.
func (r *Router) gateway() types.NamespacedName {
	gw := r.Gateway
	if gw.Name == "" {
		gw.Name = access.DefaultGatewayName
	}
	if gw.Namespace == "" {
		gw.Namespace = access.DefaultGatewayNamespace
	}
	return gw
}

// tcpClaims lists the TCPRoutes of the regional cluster attached to the
// tenant Gateway's listeners: those of the workspace are claims it may keep
// (its routes outlive a lost status), the others' listeners are taken. One
// request, made only when an endpoint needs a new port.
func tcpClaims(ctx context.Context, v *regionalView, obj *workspacesv1.WorkspaceDeployment) ([]access.Claim, map[string]bool, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(access.TCPRouteGVK(v.tcpVersion).GroupVersion().WithKind("TCPRouteList"))
	if err := v.client.List(ctx, list); err != nil {
		return nil, nil, fmt.Errorf("listing TCPRoutes on regional cluster %s: %w", v.cluster, err)
	}
	own := Owner(obj)
	self := client.ObjectKeyFromObject(obj)
	taken := map[string]bool{}
	var claims []access.Claim
	for i := range list.Items {
		route := &list.Items[i]
		for _, section := range gatewaySections(route, v.gateway) {
			if section == "" {
				continue
			}
			if route.GetNamespace() == plan.ChildNamespace(obj.Name) && own.Owns(route.GetLabels()) {
				claims = append(claims, access.Claim{Holder: self, Endpoint: route.GetName(), Listener: section})
				continue
			}
			taken[section] = true
		}
	}
	return claims, taken, nil
}

// routeStatus reads the status of one route of a workspace (in namespace
// ns) from the regional cluster; nil when the route does not exist.
func routeStatus(ctx context.Context, v *regionalView, ns string, route access.Route) (*gatewayv1.RouteStatus, error) {
	gvk := access.HTTPRouteGVK
	if access.IsTCP(route.Endpoint) {
		gvk = access.TCPRouteGVK(v.tcpVersion)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := v.client.Get(ctx, types.NamespacedName{Namespace: ns, Name: route.Endpoint.Name}, u); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading %s %s/%s on regional cluster %s: %w", gvk.Kind, ns, route.Endpoint.Name, v.cluster, err)
	}
	st := &gatewayv1.RouteStatus{}
	if m, ok := u.Object["status"].(map[string]any); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, st); err != nil {
			return nil, fmt.Errorf("reading the status of %s %s/%s: %w", gvk.Kind, ns, route.Endpoint.Name, err)
		}
	}
	return st, nil
}
