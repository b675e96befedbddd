package workspace

import (
	"context"
	"fmt"

	"github.com/fluxcd/pkg/runtime/conditions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
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
	if relabelled, err := r.relabel(ctx, obj, t.Unit); err != nil || relabelled {
		// The workspace leaves this shard's cache if its unit is another's;
		// the shard caching it next reconciles it.
		return ctrl.Result{RequeueAfter: t.RequeueAfter}, err
	}
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
// A workspace that left this shard's cache without being deleted (a
// tenant moved its bucket label to another shard's bucket) is noted, so
// that its reconcile, finding it gone from the cache, reads it past the
// cache and takes it back when its unit is this shard's (reclaim).
func (r *Reconciler) shardPredicate() predicate.Predicate {
	relevant := func(o client.Object) bool {
		w, ok := o.(*workspacesv1.WorkspaceDeployment)
		return !ok || r.relevant(context.Background(), w)
	}
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return relevant(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return relevant(e.ObjectNew) },
		GenericFunc: func(e event.GenericEvent) bool { return relevant(e.Object) },
		DeleteFunc: func(e event.DeleteEvent) bool {
			if !relevant(e.Object) {
				return false
			}
			if r.Shards.Enabled() && e.Object.GetDeletionTimestamp().IsZero() &&
				!r.Shards.Config.DesiresBucket(e.Object.GetLabels()[shard.BucketLabel]) {
				r.noteLeft(client.ObjectKeyFromObject(e.Object))
			}
			return true
		},
	}
}

func (r *Reconciler) noteLeft(key types.NamespacedName) {
	r.leftMu.Lock()
	defer r.leftMu.Unlock()
	if r.left == nil {
		r.left = map[types.NamespacedName]bool{}
	}
	r.left[key] = true
}

// labelUnbucketed writes the bucket label of a workspace without a valid
// one, which this shard caches as a summary only (internal/manager's split
// cache): the shard desiring its unit labels it, adding the finalizer in
// the same write when it acts on the unit, as the first reconcile of a
// workspace would; the label brings the whole workspace into that shard's
// own informer, whose event reconciles it. Other shards do nothing.
func (r *Reconciler) labelUnbucketed(ctx context.Context, obj *workspacesv1.WorkspaceDeployment, t shard.Ticket) (ctrl.Result, error) {
	if !r.mustRelabel(obj, t.Unit) {
		return ctrl.Result{RequeueAfter: t.RequeueAfter}, nil
	}
	before := obj.DeepCopy()
	r.setBucket(obj, t.Unit)
	if t.Acting() && obj.DeletionTimestamp.IsZero() {
		controllerutil.AddFinalizer(obj, workspacesv1.WorkspaceDeploymentFinalizer)
	}
	// The diff of two summaries is the metadata alone.
	patch := client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})
	if err := r.Patch(ctx, obj, patch, client.FieldOwner(reconciler.FieldOwner)); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return ctrl.Result{RequeueAfter: shard.Retry}, nil
		}
		return ctrl.Result{}, fmt.Errorf("writing the shard bucket label: %w", err)
	}
	return ctrl.Result{}, nil
}

// forgetLeft drops the note of a workspace the cache holds again.
func (r *Reconciler) forgetLeft(key types.NamespacedName) {
	if !r.Shards.Enabled() {
		return
	}
	r.leftMu.Lock()
	defer r.leftMu.Unlock()
	delete(r.left, key)
}

// reclaim reads past the cache a workspace noted as having left it and,
// when its unit is this shard's, writes its unit's bucket back: so a label
// a tenant moved to another shard's bucket does not hide the workspace
// from this shard for longer than a write, even when that shard is down.
func (r *Reconciler) reclaim(ctx context.Context, key types.NamespacedName) error {
	r.leftMu.Lock()
	left := r.left[key]
	delete(r.left, key)
	r.leftMu.Unlock()
	if !left || r.APIReader == nil {
		return nil
	}
	obj := &workspacesv1.WorkspaceDeployment{}
	if err := r.APIReader.Get(ctx, key, obj); err != nil {
		return client.IgnoreNotFound(err)
	}
	u, err := r.Shards.UnitOfCluster(ctx, plan.ClusterKey(obj))
	if err != nil || shard.Desired(u.Key(), r.Shards.Config.Shards) != r.Shards.Config.Index {
		return err
	}
	_, err = r.relabel(ctx, obj, u)
	return err
}

// A workspace labelled with a bucket of this shard that is not its unit's
// is relevant too: this shard corrects the label (mustRelabel).
func (r *Reconciler) relevant(ctx context.Context, w *workspacesv1.WorkspaceDeployment) bool {
	if !r.Shards.Enabled() {
		return true
	}
	u, err := r.Shards.UnitOfCluster(ctx, plan.ClusterKey(w))
	return err != nil || r.mustRelabel(w, u) || r.Shards.Relevant(ctx, u)
}

// mustRelabel reports whether this shard corrects the bucket label of a
// workspace of unit u. The shard desiring u does for any wrong label (it
// sees workspaces without a valid label in its unbucketed informer); any
// other shard only for a label naming one of its own buckets, since only
// it caches such a workspace. So one shard, not every shard, labels a new
// workspace, and a label naming another shard's bucket (stale or forged)
// is corrected by the one shard that sees it.
func (r *Reconciler) mustRelabel(w *workspacesv1.WorkspaceDeployment, u shard.Unit) bool {
	if !r.Shards.Enabled() {
		return false
	}
	_, wrong := r.Shards.Config.Relabel(u, w.Labels)
	if !wrong {
		return false
	}
	c := r.Shards.Config
	return shard.Desired(u.Key(), c.Shards) == c.Index || c.DesiresBucket(w.Labels[shard.BucketLabel])
}

// setBucket sets, with shards, the bucket label of unit u on obj, in
// memory: the caller's next write of the workspace's metadata carries it.
func (r *Reconciler) setBucket(obj *workspacesv1.WorkspaceDeployment, u shard.Unit) bool {
	if !r.Shards.Enabled() {
		return false
	}
	v, wrong := r.Shards.Config.Relabel(u, obj.Labels)
	if !wrong {
		return false
	}
	if obj.Labels == nil {
		obj.Labels = map[string]string{}
	}
	obj.Labels[shard.BucketLabel] = v
	return true
}

// relabel writes the bucket label of unit u on a workspace this shard does
// not act on (new, of another shard's unit, or whose label a tenant
// changed), conditional on the version read: every shard caching the
// workspace corrects it, so it reaches the cache of its unit's shard.
func (r *Reconciler) relabel(ctx context.Context, obj *workspacesv1.WorkspaceDeployment, u shard.Unit) (bool, error) {
	if !r.mustRelabel(obj, u) {
		return false, nil
	}
	before := obj.DeepCopy()
	r.setBucket(obj, u)
	patch := client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})
	if err := r.Patch(ctx, obj, patch, client.FieldOwner(reconciler.FieldOwner)); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("writing the shard bucket label: %w", err)
	}
	log.FromContext(ctx).V(1).Info("labelled a workspace with its unit's bucket", "unit", u.String(),
		"bucket", obj.Labels[shard.BucketLabel], "was", before.Labels[shard.BucketLabel])
	return true, nil
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
