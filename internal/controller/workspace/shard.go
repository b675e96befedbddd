package workspace

import (
	"context"
	"fmt"

	"github.com/fluxcd/pkg/runtime/conditions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/access"
	"github.com/apiaryhq/apiary/internal/controller/reconciler"
	"github.com/apiaryhq/apiary/internal/shard"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
)

// enterShard decides whether this shard acts on the workspace's cluster
// (claiming it when it is this shard's and nobody holds it); a ticket that
// is not Acting ends the reconcile.
func (r *Reconciler) enterShard(ctx context.Context, obj *workspacesv1.WorkspaceDeployment) (shard.Ticket, error) {
	if !r.Shards.Enabled() {
		return r.Shards.Enter(ctx, shard.Unit{})
	}
	u, err := r.Shards.UnitOfCluster(ctx, plan.ClusterKey(obj))
	if err != nil {
		return shard.Ticket{}, err
	}
	return r.Shards.Enter(ctx, u)
}

// notActing ends the reconcile of a workspace this shard does not act on.
// The shard the workspace's cluster belongs to says why it waits in
// ShardAssigned=False (one write when the reason changes); any other shard
// writes nothing.
func (r *Reconciler) notActing(ctx context.Context, obj *workspacesv1.WorkspaceDeployment, t shard.Ticket) (ctrl.Result, error) {
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
	if err := r.Status().Patch(ctx, obj, patch, client.FieldOwner(reconciler.FieldOwner)); err != nil {
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
func (r *Reconciler) shardPredicate() predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		w, ok := o.(*workspacesv1.WorkspaceDeployment)
		return !ok || r.relevant(context.Background(), w)
	})
}

func (r *Reconciler) relevant(ctx context.Context, w *workspacesv1.WorkspaceDeployment) bool {
	if !r.Shards.Enabled() {
		return true
	}
	u, err := r.Shards.UnitOfCluster(ctx, plan.ClusterKey(w))
	return err != nil || r.Shards.Relevant(ctx, u)
}

// mine drops, from what a watch maps to, the workspaces of other shards.
func (r *Reconciler) mine(f handler.MapFunc) handler.MapFunc {
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

// portStripe is the part of every regional port pool this replica hands out
// new ports from: with shards, the stripe of its index, so that shards
// routing to one regional cluster never pick the same free port at once.
// Ports already held are kept wherever they are.
func (r *Reconciler) portStripe() access.Stripe {
	if !r.Shards.Enabled() {
		return access.Stripe{}
	}
	return access.Stripe{Index: r.Shards.Config.Index, Of: r.Shards.Config.Shards}
}
