package controllers

import (
	"context"
	"fmt"

	"github.com/fluxcd/pkg/runtime/conditions"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/access"
	"github.com/apiaryhq/apiary/internal/shard"
	"github.com/apiaryhq/apiary/internal/wake"
)

// workspaceShardWaitIndex indexes the workspaces whose ShardAssigned
// condition is False, for the Lease events that may end their wait.
const workspaceShardWaitIndex = ".status.conditions.shardAssigned"

// enterShard decides whether this shard acts on the workspace's cluster
// (claiming it when it is this shard's and nobody holds it); a ticket that
// is not Acting ends the reconcile.
func (r *WorkspaceDeploymentReconciler) enterShard(ctx context.Context, obj *workspacesv1.WorkspaceDeployment) (shard.Ticket, error) {
	if !r.Shards.Enabled() {
		return r.Shards.Enter(ctx, shard.Unit{})
	}
	u, err := r.Shards.UnitOfCluster(ctx, clusterKey(obj))
	if err != nil {
		return shard.Ticket{}, err
	}
	return r.Shards.Enter(ctx, u)
}

// notActing ends the reconcile of a workspace this shard does not act on.
// The shard the workspace's cluster belongs to says why it waits in
// ShardAssigned=False (one write when the reason changes); any other shard
// writes nothing.
func (r *WorkspaceDeploymentReconciler) notActing(ctx context.Context, obj *workspacesv1.WorkspaceDeployment, t shard.Ticket) (ctrl.Result, error) {
	if t.Action != shard.Wait || !obj.DeletionTimestamp.IsZero() {
		return ctrl.Result{RequeueAfter: t.RequeueAfter}, nil
	}
	c := conditions.Get(obj, workspacesv1.ShardAssignedCondition)
	if c != nil && c.Reason == t.Reason && c.Message == t.Message {
		return ctrl.Result{RequeueAfter: t.RequeueAfter}, nil
	}
	// Another shard may be acting on the workspace: the write is
	// conditional on the version read, and is retried on a conflict.
	before := obj.DeepCopy()
	conditions.MarkFalse(obj, workspacesv1.ShardAssignedCondition, t.Reason, "%s", t.Message)
	patch := client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})
	if err := r.Status().Patch(ctx, obj, patch, client.FieldOwner(fieldOwner)); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: shard.Retry}, nil
		}
		return ctrl.Result{}, fmt.Errorf("writing the ShardAssigned condition: %w", err)
	}
	r.written.Remember(obj.DeepCopy())
	return ctrl.Result{RequeueAfter: t.RequeueAfter}, nil
}

// shardPredicate lets through the events of workspaces this shard may have
// work on: its clusters' and the ones it holds. Reconciles decide again.
func (r *WorkspaceDeploymentReconciler) shardPredicate() predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		w, ok := o.(*workspacesv1.WorkspaceDeployment)
		return !ok || r.relevant(context.Background(), w)
	})
}

func (r *WorkspaceDeploymentReconciler) relevant(ctx context.Context, w *workspacesv1.WorkspaceDeployment) bool {
	if !r.Shards.Enabled() {
		return true
	}
	u, err := r.Shards.UnitOfCluster(ctx, clusterKey(w))
	return err != nil || r.Shards.Relevant(ctx, u)
}

// mine drops, from what a watch maps to, the workspaces of other shards.
func (r *WorkspaceDeploymentReconciler) mine(f handler.MapFunc) handler.MapFunc {
	if !r.Shards.Enabled() {
		return f
	}
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		reqs := f(ctx, o)
		out := reqs[:0]
		for _, req := range reqs {
			w := &workspacesv1.WorkspaceDeployment{}
			if err := r.Get(ctx, req.NamespacedName, w); err != nil || r.relevant(ctx, w) {
				out = append(out, req)
			}
		}
		return out
	}
}

// workspacesOfColony maps a Colony to the workspaces of its clusters: a
// Colony that is claimed, released or lists a new cluster changes which
// shard acts on them.
func (r *WorkspaceDeploymentReconciler) workspacesOfColony(ctx context.Context, o client.Object) []reconcile.Request {
	c, ok := o.(*infrav1.Colony)
	if !ok {
		return nil
	}
	var out []reconcile.Request
	for _, name := range shard.ClusterNames(c) {
		out = append(out, requests(r.listBy(ctx, workspaceClusterIndex, client.ObjectKey{Namespace: c.Namespace, Name: name}.String()), nil)...)
	}
	return out
}

// shardWaiters maps a shard's Lease to the workspaces that wait for a shard
// to hand their cluster over (waitShard): its holder may have stopped.
func (r *WorkspaceDeploymentReconciler) shardWaiters(context.Context, client.Object) []reconcile.Request {
	return r.wake(wake.Topic{Kind: waitShard})
}

// setupShardWatches adds the watches sharding needs: Colonies (claims,
// releases, new clusters) and the shards' Leases.
func (r *WorkspaceDeploymentReconciler) setupShardWatches(mgr ctrl.Manager, b *ctrl.Builder) (*ctrl.Builder, error) {
	if !r.Shards.Enabled() {
		return b, nil
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &workspacesv1.WorkspaceDeployment{}, workspaceShardWaitIndex,
		func(o client.Object) []string {
			if conditions.IsFalse(o.(*workspacesv1.WorkspaceDeployment), workspacesv1.ShardAssignedCondition) {
				return []string{"true"}
			}
			return nil
		}); err != nil {
		return nil, err
	}
	return b.
		Watches(&infrav1.Colony{}, handler.EnqueueRequestsFromMapFunc(r.mine(r.workspacesOfColony)),
			holderOrSpecChanged()).
		Watches(&coordinationv1.Lease{}, handler.EnqueueRequestsFromMapFunc(r.shardWaiters), shardLeases(r.Shards)), nil
}

// holderOrSpecChanged passes a holder object's creation, deletion, spec
// change or change of shard claim.
func holderOrSpecChanged() builder.Predicates {
	return builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetAnnotations()[shard.HolderAnnotation] != e.ObjectNew.GetAnnotations()[shard.HolderAnnotation]
		},
	}))
}

// shardLeases passes the events of the shards' Leases in their namespace.
func shardLeases(g *shard.Gate) builder.Predicates {
	return builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, ok := shard.LeaseIndex(o.GetName())
		return ok && o.GetNamespace() == g.LeaseNamespace
	}))
}

// portStripe is the part of every regional port pool this replica hands out
// new ports from: with shards, the stripe of its index, so that shards
// routing to one regional cluster never pick the same free port at once.
// Ports already held are kept wherever they are.
func (r *WorkspaceDeploymentReconciler) portStripe() access.Stripe {
	if !r.Shards.Enabled() {
		return access.Stripe{}
	}
	return access.Stripe{Index: r.Shards.Config.Index, Of: r.Shards.Config.Shards}
}
