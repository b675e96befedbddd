package controllers

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/access"
	"github.com/apiaryhq/apiary/internal/delivery"
)

// dropRoutes deletes the routes recorded on the workspace's status from
// their regional cluster (routes and Services first, awaited, so that their
// pool ports are free; then the namespace, not awaited), frees the
// workspace's pool ports and forgets the routes. A regional cluster that is
// gone or going takes its routes with it. It reports done=false while routes
// remain.
func (r *WorkspaceDeploymentReconciler) dropRoutes(ctx context.Context, obj *workspacesv1.WorkspaceDeployment) (bool, error) {
	self := client.ObjectKeyFromObject(obj)
	release := func() {
		if r.ports != nil {
			r.ports.Release(self)
		}
	}
	rs := obj.Status.Routes
	if rs == nil {
		release()
		return true, nil
	}
	key, ok := parseObjectKey(rs.Cluster)
	if ok && r.RouteSinks != nil && rs.Delivery != nil && rs.Delivery.Inventory != nil && len(rs.Delivery.Inventory.Entries) > 0 {
		cd := &k0rdentv1beta1.ClusterDeployment{}
		err := r.Get(ctx, key, cd)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return false, fmt.Errorf("reading regional ClusterDeployment %s: %w", key, err)
		case cd.DeletionTimestamp.IsZero():
			sink, err := r.RouteSinks.For(ctx, key)
			if err != nil {
				return false, err
			}
			routes, namespaces := splitNamespaces(rs.Delivery.Inventory)
			done, err := sink.Delete(ctx, routesOwner(obj), routes)
			if err != nil {
				return false, fmt.Errorf("deleting the routes on regional cluster %s: %w", key, err)
			}
			if !done {
				return false, nil
			}
			// A namespace terminates on its own; its deletion is not awaited.
			if _, err := sink.Delete(ctx, routesOwner(obj), namespaces); err != nil {
				return false, fmt.Errorf("deleting the routes' namespace on regional cluster %s: %w", key, err)
			}
		}
	}
	release()
	obj.Status.Routes = nil
	return true, nil
}

// splitNamespaces splits an inventory into its namespaces and the rest.
func splitNamespaces(inv *commonv1.ResourceInventory) (rest, namespaces *commonv1.ResourceInventory) {
	rest, namespaces = &commonv1.ResourceInventory{}, &commonv1.ResourceInventory{}
	for _, e := range inv.Entries {
		if id, err := delivery.ParseID(e.ID); err == nil && id.Group == "" && id.Kind == "Namespace" {
			namespaces.Entries = append(namespaces.Entries, e)
			continue
		}
		rest.Entries = append(rest.Entries, e)
	}
	return rest, namespaces
}

// parseObjectKey parses "namespace/name".
func parseObjectKey(s string) (types.NamespacedName, bool) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" {
		return types.NamespacedName{}, false
	}
	return types.NamespacedName{Namespace: ns, Name: name}, true
}

var sweepLog = log.Log.WithName("workspace-route-sweeper")

// routeSweeper deletes, from regional clusters, the routes, mirror
// Services and namespaces Apiary delivered for workspaces that no longer
// exist (e.g. deleted while their regional cluster was out of reach). It
// sweeps every regional cluster once when the manager starts, then one
// regional cluster after each deletion of a workspace routed there: no
// periodic polling.
type routeSweeper struct {
	r *WorkspaceDeploymentReconciler

	mu      sync.Mutex
	pending map[types.NamespacedName]bool
	wake    chan struct{}
}

func newRouteSweeper(r *WorkspaceDeploymentReconciler) *routeSweeper {
	return &routeSweeper{r: r, pending: map[types.NamespacedName]bool{}, wake: make(chan struct{}, 1)}
}

// NeedLeaderElection makes only the leader sweep.
func (s *routeSweeper) NeedLeaderElection() bool { return true }

// Start sweeps every regional cluster, then each one it is asked to.
func (s *routeSweeper) Start(ctx context.Context) error {
	s.sweepAll(ctx)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.wake:
			s.mu.Lock()
			keys := make([]types.NamespacedName, 0, len(s.pending))
			for k := range s.pending {
				keys = append(keys, k)
			}
			s.pending = map[types.NamespacedName]bool{}
			s.mu.Unlock()
			for _, k := range keys {
				s.sweep(ctx, k)
			}
		}
	}
}

// sweepOnOpen is implemented by route sinks that sweep a regional
// cluster's routes on their own when they open it, such as GitRouteSinks.
type sweepOnOpen interface {
	Open(ctx context.Context, regional types.NamespacedName) error
}

// trigger asks for a sweep of one regional cluster; requests coalesce. In
// Git mode a workspace's deletion removed its files, so there is nothing
// to sweep after it.
func (s *routeSweeper) trigger(key types.NamespacedName) {
	if s == nil {
		return
	}
	if _, ok := s.r.RouteSinks.(sweepOnOpen); ok {
		return
	}
	s.mu.Lock()
	s.pending[key] = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// sweepAll sweeps every regional ClusterDeployment: those labelled with a
// KOF cluster name or the regional role.
func (s *routeSweeper) sweepAll(ctx context.Context) {
	list := &k0rdentv1beta1.ClusterDeploymentList{}
	if err := s.r.List(ctx, list); err != nil {
		sweepLog.Error(err, "listing ClusterDeployments to sweep orphaned routes")
		return
	}
	sort.Slice(list.Items, func(i, j int) bool {
		return list.Items[i].Namespace+"/"+list.Items[i].Name < list.Items[j].Namespace+"/"+list.Items[j].Name
	})
	for i := range list.Items {
		cd := &list.Items[i]
		_, named := cd.Labels[access.ClusterNameLabel]
		if (named || cd.Labels[access.ClusterRoleLabel] == access.RoleRegional) && cd.DeletionTimestamp.IsZero() {
			s.sweep(ctx, client.ObjectKeyFromObject(cd))
		}
	}
}

// sweep deletes the orphaned route objects of one regional cluster. An
// unreachable cluster is skipped: the next sweep looks again.
func (s *routeSweeper) sweep(ctx context.Context, key types.NamespacedName) {
	logger := sweepLog.WithValues("regionalCluster", key)
	if o, ok := s.r.RouteSinks.(sweepOnOpen); ok {
		if err := o.Open(ctx, key); err != nil {
			logger.Error(err, "opening the Git folder of a regional cluster's routes to sweep it")
		}
		return
	}
	c, err := s.r.Children.Client(ctx, key)
	if err != nil {
		logger.V(1).Info("skipping the sweep of an unreachable regional cluster", "error", err.Error())
		return
	}
	kinds := []schema.GroupVersionKind{{Version: "v1", Kind: "Service"}, httpRouteGVK}
	if v := tcpRouteVersion(c); v != "" {
		kinds = append(kinds, tcpRouteGVK(v))
	}
	kinds = append(kinds, schema.GroupVersionKind{Version: "v1", Kind: "Namespace"})
	selector := client.MatchingLabels{delivery.LabelOwnerKind: delivery.LabelValue(routesOwnerKind)}
	for _, gvk := range kinds {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.List(ctx, list, selector); err != nil {
			if !meta.IsNoMatchError(err) {
				logger.V(1).Info("skipping a kind in the sweep", "kind", gvk.Kind, "error", err.Error())
			}
			continue
		}
		for i := range list.Items {
			o := &list.Items[i]
			owner := delivery.Owner{Namespace: o.Labels[delivery.LabelOwnerNamespace], Name: o.Labels[delivery.LabelOwnerName]}
			if workspaceExists(ctx, s.r.Client, owner) || !o.DeletionTimestamp.IsZero() {
				continue
			}
			uid := o.UID
			if err := c.Delete(ctx, o, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
				logger.Error(err, "deleting an orphaned route object", "kind", gvk.Kind, "object", client.ObjectKeyFromObject(o))
				continue
			}
			logger.Info("deleted an orphaned route object", "kind", gvk.Kind, "object", client.ObjectKeyFromObject(o), "workspace", owner.Namespace+"/"+owner.Name)
		}
	}
}

// workspaceExists reports whether the workspace a route owner names exists;
// true when the cache cannot tell, so that nothing is swept by mistake.
func workspaceExists(ctx context.Context, c client.Reader, o delivery.Owner) bool {
	err := c.Get(ctx, types.NamespacedName{Namespace: o.Namespace, Name: o.Name}, &workspacesv1.WorkspaceDeployment{})
	return !apierrors.IsNotFound(err)
}

// WorkspaceExists is workspaceExists for route sinks that sweep on their
// own, such as GitRouteSinks.
func WorkspaceExists(c client.Reader) func(delivery.Owner) bool {
	return func(o delivery.Owner) bool { return workspaceExists(context.Background(), c, o) }
}
