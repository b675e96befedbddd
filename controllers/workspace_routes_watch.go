package controllers

import (
	"context"
	"fmt"

	"github.com/fluxcd/pkg/runtime/conditions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/access"
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

// poolWaiters maps the deletion of a workspace, which frees its pool ports,
// to the workspaces whose TCP or SSH endpoints wait for a port.
func (r *WorkspaceDeploymentReconciler) poolWaiters(ctx context.Context, o client.Object) []reconcile.Request {
	list := &workspacesv1.WorkspaceDeploymentList{}
	if err := r.List(ctx, list); err != nil {
		return nil
	}
	return requests(list.Items, func(w *workspacesv1.WorkspaceDeployment) bool {
		return w.UID != o.GetUID() && conditions.GetReason(w, workspacesv1.RoutesReadyCondition) == workspacesv1.PortPoolExhaustedReason
	})
}

// routedViaRegional maps a regional ClusterDeployment to the Running
// workspaces of its child clusters whose routes are not ready, e.g. because
// the regional cluster was missing; and, when it is being deleted or gone,
// to the workspaces whose routes it holds, which then let them go.
func (r *WorkspaceDeploymentReconciler) routedViaRegional(ctx context.Context, o client.Object) []reconcile.Request {
	var out []reconcile.Request
	if r.goingOrGone(ctx, o) {
		out = requests(r.listBy(ctx, workspaceRegionalIndex, client.ObjectKeyFromObject(o).String()), nil)
	}
	return append(out, requests(r.workspacesOfChildren(ctx, o), func(w *workspacesv1.WorkspaceDeployment) bool {
		return w.Status.Phase == workspacesv1.PhaseRunning && !conditions.IsTrue(w, workspacesv1.RoutesReadyCondition)
	})...)
}

// goingOrGone reports whether a ClusterDeployment of an event is being
// deleted or no longer in the cache.
func (r *WorkspaceDeploymentReconciler) goingOrGone(ctx context.Context, o client.Object) bool {
	if !o.GetDeletionTimestamp().IsZero() {
		return true
	}
	err := r.Get(ctx, client.ObjectKeyFromObject(o), &k0rdentv1beta1.ClusterDeployment{})
	return apierrors.IsNotFound(err)
}
