package controllers

import (
	"context"
	"fmt"
	"maps"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/access"
	"github.com/apiaryhq/apiary/internal/wake"
)

// setupRoutes prepares the routing step: the port ledger, the route sinks,
// the index of workspaces by regional cluster, and the orphan sweeper.
func (r *WorkspaceDeploymentReconciler) setupRoutes(mgr ctrl.Manager) error {
	r.ports = access.NewLedger()
	if r.RouteSinks == nil && r.Children != nil {
		r.RouteSinks = NewDirectRouteSinks(r.Children)
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &workspacesv1.WorkspaceDeployment{}, workspaceRegionalIndex,
		func(o client.Object) []string {
			if rs := o.(*workspacesv1.WorkspaceDeployment).Status.Routes; rs != nil && rs.Cluster != "" {
				return []string{rs.Cluster}
			}
			return nil
		}); err != nil {
		return fmt.Errorf("indexing workspaces by regional cluster: %w", err)
	}
	if g, ok := r.RouteSinks.(*GitRouteSinks); ok && (r.ClusterWide || !r.Shards.Enabled()) {
		if err := (&RegionalRoutesReconciler{Client: r.Client, Sinks: g}).SetupWithManager(mgr); err != nil {
			return fmt.Errorf("setting up the regional routes controller: %w", err)
		}
	}
	if r.Children == nil {
		return nil
	}
	r.sweeper = newRouteSweeper(r)
	if err := mgr.Add(r.sweeper); err != nil {
		return fmt.Errorf("adding the route sweeper: %w", err)
	}
	return nil
}

// routedViaRegional maps a regional ClusterDeployment that appears, goes or
// changes its labels to the workspaces whose routes it holds and to those
// of its child clusters (waitRoutes): which regional cluster a workspace's
// routes go to may change.
func (r *WorkspaceDeploymentReconciler) routedViaRegional(ctx context.Context, o client.Object) []reconcile.Request {
	topics := []wake.Topic{clusterTopic(waitRoutes, client.ObjectKeyFromObject(o))}
	for _, child := range r.childrenOf(ctx, o) {
		topics = append(topics, clusterTopic(waitRoutes, child))
	}
	return r.wake(topics...)
}

// regionalChanged passes the events of a ClusterDeployment that may change
// which regional cluster routes go to: created, deleted, relabelled, or
// being deleted.
func regionalChanged() builder.Predicates {
	return builder.WithPredicates(predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return !maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) ||
				e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	})
}
