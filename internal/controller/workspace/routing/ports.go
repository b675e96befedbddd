package routing

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/access"
	"github.com/apiaryhq/apiary/internal/controller/index"
)

// assignPorts takes pool ports for the workspace's TCP and SSH endpoints
// from the ledger, seeded with what the statuses of the regional cluster's
// workspaces record. The regional cluster's TCPRoutes are listed only when
// an endpoint needs a new port, so that other writers' ports are not taken.
func (r *Router) assignPorts(ctx context.Context, obj *workspacesv1.WorkspaceDeployment,
	endpoints []workspacesv1.AccessEndpoint, v *regionalView) (map[string]access.Listener, *routeBlock) {
	if v.noTCP != "" || len(v.tenant.Pool) == 0 {
		return nil, nil
	}
	self := client.ObjectKeyFromObject(obj)
	claims, err := r.poolClaims(ctx, obj, v)
	if err != nil {
		return nil, routingError("%s", err)
	}
	tcp := access.TCPEndpoints(endpoints)
	known := r.Ports.Held(v.poolKey(), self)
	for _, c := range claims {
		if c.Holder == self {
			known[c.Endpoint] = c.Listener
		}
	}
	var taken map[string]bool
	for _, e := range tcp {
		if l, ok := known[e]; ok && inPool(v.tenant.Pool, l) {
			continue
		}
		own, t, err := tcpClaims(ctx, v, obj)
		if err != nil {
			return nil, routingError("%s", err)
		}
		claims, taken = append(claims, own...), t
		break
	}
	// A workspace that stopped asks for the ports it held before, after
	// every other claim: it gets those still free.
	for _, c := range preferredPorts(obj, self) {
		if !taken[c.Listener] {
			claims = append(claims, c)
		}
	}
	live := func(h types.NamespacedName) bool {
		return !apierrors.IsNotFound(r.Get(ctx, h, &workspacesv1.WorkspaceDeployment{}))
	}
	return r.Ports.Assign(v.poolKey(), access.Request{Holder: self, Endpoints: tcp, Pool: v.tenant.Pool,
		Claims: claims, Taken: taken, Live: live, Stripe: r.Stripe}), nil
}

// preferredPorts are the pool ports a workspace held before it stopped.
func preferredPorts(obj *workspacesv1.WorkspaceDeployment, self types.NamespacedName) []access.Claim {
	l := obj.Status.Lifecycle
	if l == nil {
		return nil
	}
	out := make([]access.Claim, 0, len(l.Ports))
	for _, p := range l.Ports {
		out = append(out, access.Claim{Holder: self, Endpoint: p.Endpoint, Listener: p.Listener})
	}
	return out
}

func inPool(pool []access.Listener, name string) bool {
	for _, l := range pool {
		if l.Name == name {
			return true
		}
	}
	return false
}

// poolClaims returns the ports the workspaces of a regional cluster record
// on their status for its tenant Gateway, this one's first, from the cache.
func (r *Router) poolClaims(ctx context.Context, obj *workspacesv1.WorkspaceDeployment, v *regionalView) ([]access.Claim, error) {
	records, err := r.gatewayRecords(ctx, obj, v)
	if err != nil {
		return nil, err
	}
	var claims []access.Claim
	for _, w := range records {
		for _, p := range w.Status.Routes.Ports {
			claims = append(claims, access.Claim{Holder: client.ObjectKeyFromObject(w), Endpoint: p.Endpoint, Listener: p.Listener})
		}
	}
	return claims, nil
}

// gatewayRecords returns the workspaces of a regional cluster whose status
// records routes on its tenant Gateway: obj first, as it is now, then the
// others from the cache.
func (r *Router) gatewayRecords(ctx context.Context, obj *workspacesv1.WorkspaceDeployment, v *regionalView) ([]*workspacesv1.WorkspaceDeployment, error) {
	list := &workspacesv1.WorkspaceDeploymentList{}
	if err := r.List(ctx, list, client.MatchingFields{index.WorkspaceRegional: v.cluster.String()}); err != nil {
		return nil, fmt.Errorf("listing the workspaces of regional cluster %s: %w", v.cluster, err)
	}
	onGateway := func(w *workspacesv1.WorkspaceDeployment) bool {
		rs := w.Status.Routes
		return rs != nil && rs.Cluster == v.cluster.String() && rs.Gateway == v.gateway.String()
	}
	var out []*workspacesv1.WorkspaceDeployment
	if onGateway(obj) {
		out = append(out, obj)
	}
	self := client.ObjectKeyFromObject(obj)
	for i := range list.Items {
		if w := &list.Items[i]; client.ObjectKeyFromObject(w) != self && onGateway(w) {
			out = append(out, w)
		}
	}
	return out, nil
}
