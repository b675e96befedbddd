package routing

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/access"
	"github.com/apiaryhq/apiary/internal/childcluster"
	"github.com/apiaryhq/apiary/internal/mesh"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
)

// cachedGateway reads a Gateway from a cluster's cache. What an
// administrator fixes (no Gateway API, no Gateway) is reported as
// RoutingInfraNotReady without a requeue: the Gateway watch brings the
// workspace back once it changes.
func cachedGateway(ctx context.Context, cc *childcluster.ClusterCache, key types.NamespacedName, where string) (*gatewayv1.Gateway, *routeBlock) {
	gw, err := cc.Gateway(ctx, key)
	switch {
	case errors.Is(err, childcluster.ErrGatewayAPINotServed):
		return nil, watched(infraNotReady("the Gateway API is not installed on %s", where))
	case apierrors.IsNotFound(err):
		return nil, watched(infraNotReady("Gateway %s not found on %s", key, where))
	case err != nil:
		return nil, routingError("reading Gateway %s on %s: %s", key, where, err)
	}
	return gw, nil
}

// waypoints checks that the waypoint Gateway <cd>-waypoint of the
// workspace's child cluster exists and is programmed on the regional
// cluster and on the child (the operator's ADR-0005): without both, traffic
// from the tenant Gateway cannot reach the child through the mesh. Both
// clusters' Gateways are watched, so a waypoint that appears or becomes
// programmed routes the workspace without a change to it.
func (r *Router) waypoints(ctx context.Context, w *Target, v *regionalView) *routeBlock {
	key := r.Mesh.Waypoint(w.CDKey.Name)
	if errs := validation.IsDNS1123Subdomain(key.Name); len(errs) > 0 {
		return routingError("the waypoint name %q of cluster %s is not a valid Gateway name: %s", key.Name, w.CDKey, strings.Join(errs, "; "))
	}
	var missing []string
	check := func(cc *childcluster.ClusterCache, where string) *routeBlock {
		gw, block := cachedGateway(ctx, cc, key, where)
		switch {
		case block != nil && block.reason != workspacesv1.RoutingInfraNotReadyReason:
			return block
		case block != nil:
			missing = append(missing, "waypoint "+block.message)
		default:
			if why := access.NotProgrammed(gw); why != "" {
				missing = append(missing, fmt.Sprintf("waypoint Gateway %s on %s is not programmed: %s", key, where, why))
			}
		}
		return nil
	}
	if block := check(v.cache, "regional cluster "+v.cluster.String()); block != nil {
		return block
	}
	cc, err := r.Children.Watch(ctx, w.CDKey, WatchOwner(w.Obj), childcluster.WatchOptions{Gateways: true})
	if err != nil {
		missing = append(missing, fmt.Sprintf("cannot reach child cluster %s to read its waypoint: %s", w.CDKey, err))
		b := infraNotReady("%s", strings.Join(missing, "; "))
		b.requeue = routeErrorResync
		return b
	}
	if block := check(cc, "child cluster "+w.CDKey.String()); block != nil {
		return block
	}
	if len(missing) > 0 {
		return watched(infraNotReady("%s", strings.Join(missing, "; ")))
	}
	return nil
}

// markServicesGlobal labels the child's Services of the workspace's routes
// istio.io/global=true, as their mirrors on the regional cluster are: Istio
// joins a mirror to its child Service across clusters only when both carry
// it. A Service the release does not have (yet) is left for a later pass,
// as the exalsius operator does. Only the label is patched, once.
func (r *Router) markServicesGlobal(ctx context.Context, w *Target, routes []access.Route) *routeBlock {
	c, err := r.Children.Client(ctx, w.CDKey)
	if err != nil {
		return routingError("reaching child cluster %s to mark its Services global: %s", w.CDKey, err)
	}
	ns := plan.ChildNamespace(w.Obj.Name)
	done := map[string]bool{}
	for _, rt := range routes {
		if !rt.Routable() || done[rt.ServiceName] {
			continue
		}
		done[rt.ServiceName] = true
		svc := &metav1.PartialObjectMetadata{}
		svc.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Service"))
		switch err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: rt.ServiceName}, svc); {
		case apierrors.IsNotFound(err):
			log.FromContext(ctx).V(1).Info("the child has no Service of the route yet", "service", ns+"/"+rt.ServiceName)
			continue
		case err != nil:
			return routingError("reading Service %s/%s on child cluster %s: %s", ns, rt.ServiceName, w.CDKey, err)
		case svc.Labels[mesh.GlobalLabel] == "true":
			continue
		}
		patch := client.MergeFrom(svc.DeepCopy())
		svc.Labels = maps.Clone(svc.Labels)
		if svc.Labels == nil {
			svc.Labels = map[string]string{}
		}
		svc.Labels[mesh.GlobalLabel] = "true"
		if err := c.Patch(ctx, svc, patch); client.IgnoreNotFound(err) != nil {
			return routingError("labelling Service %s/%s on child cluster %s %s=true: %s", ns, rt.ServiceName, w.CDKey, mesh.GlobalLabel, err)
		}
	}
	return nil
}
