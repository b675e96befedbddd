package tenantquota

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/reconciler"
	"github.com/apiaryhq/apiary/internal/metrics"
	"github.com/apiaryhq/apiary/internal/quota"
	"github.com/apiaryhq/apiary/internal/shard"
)

// DefaultStaleChargeAfter is how long a charge that no admission in force
// accounts for is left alone before it is corrected.
const DefaultStaleChargeAfter = 2 * time.Minute

// Reconciler keeps a TenantQuota's ledger true to the workspaces
// of the namespaces it selects: charges of workspaces that are gone, or of
// namespaces that left the tenant, are removed; workspaces admitted before
// the quota selected them are charged; the derived usage, summary and
// conditions follow. Workspaces charge themselves when admitted; every
// write here goes through the same optimistic Ledger, so none is lost.
type Reconciler struct {
	client.Client
	// APIReader confirms that a workspace the cache does not hold is gone.
	APIReader     client.Reader
	EventRecorder events.EventRecorder
	Ledger        *quota.Ledger
	// StaleChargeAfter is DefaultStaleChargeAfter when zero.
	StaleChargeAfter time.Duration
	// Clock ages charges and stamps those put in place; the wall clock
	// when nil. It must be the workspace reconciler's, whose charges it
	// ages.
	Clock clock.PassiveClock
	// Sharded says the cache holds only this shard's buckets' workspaces.
	// Every shard then keeps the charges of the workspaces it caches true;
	// charges of workspaces no cache holds (gone without their cleanup, or
	// another shard's) are checked on the API server by shard 0 only
	// (CheckUnknown), which remembers a workspace it found for
	// StaleChargeAfter instead of reading it again on every reconcile.
	Sharded bool
	// CheckUnknown: this replica removes the charges of workspaces that
	// are gone (always without shards).
	CheckUnknown bool

	aliveMu sync.Mutex
	alive   map[types.UID]time.Time
}

// Options configure the TenantQuota controller.
type Options struct {
	MaxConcurrentReconciles int
}

// SetupWithManager registers the TenantQuota controller. It reacts to its
// quotas' spec, to workspaces whose admission changes or that go, and to
// namespaces whose labels change.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("tenantquota").
		For(&quotav1alpha1.TenantQuota{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&workspacesv1.WorkspaceDeployment{}, handler.EnqueueRequestsFromMapFunc(r.allQuotas),
			builder.WithPredicates(predicate.Funcs{
				CreateFunc: func(e event.CreateEvent) bool {
					return e.Object.(*workspacesv1.WorkspaceDeployment).Status.Admission != nil
				},
				DeleteFunc:  func(event.DeleteEvent) bool { return true },
				GenericFunc: func(event.GenericEvent) bool { return false },
				UpdateFunc: func(e event.UpdateEvent) bool {
					o, n := e.ObjectOld.(*workspacesv1.WorkspaceDeployment), e.ObjectNew.(*workspacesv1.WorkspaceDeployment)
					return !equality.Semantic.DeepEqual(o.Status.Admission, n.Status.Admission) ||
						o.DeletionTimestamp.IsZero() != n.DeletionTimestamp.IsZero()
				},
			})).
		WatchesMetadata(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.allQuotas),
			builder.WithPredicates(predicate.LabelChangedPredicate{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(opts.MaxConcurrentReconciles, 1)}).
		Complete(r)
}

// allQuotas maps a change to every quota: there are few, and which select
// a namespace is for each to say.
func (r *Reconciler) allQuotas(ctx context.Context, _ client.Object) []reconcile.Request {
	return reconciler.RequestsForAll(ctx, r.Client, &quotav1alpha1.TenantQuotaList{})
}

// Reconcile is the entry point of a TenantQuota's reconciliation.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	q := &quotav1alpha1.TenantQuota{}
	if err := r.Get(ctx, req.NamespacedName, q); err != nil {
		return ctrl.Result{}, reconciler.IgnoreGone(metrics.KindTenantQuota, req, err)
	}
	defer metrics.ObserveReconcile(metrics.KindTenantQuota, req.NamespacedName, time.Now())
	if !q.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // its charges go with it; its waiters are woken by the deletion
	}
	sel, selErr := metav1.LabelSelectorAsSelector(&q.Spec.NamespaceSelector)
	var edits quota.Edits
	if selErr == nil {
		var err error
		if edits, err = r.edits(ctx, q, sel); err != nil {
			return ctrl.Result{}, err
		}
	} else if r.EventRecorder != nil && !conditions.IsStalled(q) {
		r.EventRecorder.Eventf(q, nil, corev1.EventTypeWarning, quotav1alpha1.InvalidSelectorReason, "Reconcile", "%s", selErr)
	}
	seen := q.Status.Charges
	err := r.Ledger.Write(ctx, q.Name, func(cur *quotav1alpha1.TenantQuota) bool {
		before := cur.Status.DeepCopy()
		if cur.Generation != q.Generation {
			return false // a newer spec is queued already
		}
		edits.Apply(cur, seen)
		markQuota(cur, selErr)
		quota.Refresh(cur)
		return !equality.Semantic.DeepEqual(before, &cur.Status)
	})
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("writing the status of TenantQuota %s: %w", q.Name, err)
	}
	return ctrl.Result{RequeueAfter: edits.RequeueAfter}, nil
}

// markQuota sets the kstatus conditions and observedGeneration.
func markQuota(q *quotav1alpha1.TenantQuota, selErr error) {
	if selErr != nil {
		msg := fmt.Sprintf("spec.namespaceSelector is invalid, the quota selects no namespace: %s", selErr)
		conditions.MarkStalled(q, quotav1alpha1.InvalidSelectorReason, "%s", msg)
		conditions.MarkFalse(q, commonv1.ReadyCondition, quotav1alpha1.InvalidSelectorReason, "%s", msg)
	} else {
		conditions.Delete(q, commonv1.StalledCondition)
		conditions.MarkTrue(q, commonv1.ReadyCondition, quotav1alpha1.EnforcedReason, "Enforced on the namespaces that match spec.namespaceSelector")
	}
	q.Status.ObservedGeneration = q.Generation
}

// edits compares the ledger with the workspaces of the selected
// namespaces, confirming live that a charged workspace the cache does not
// hold is gone before its charge is removed.
func (r *Reconciler) edits(ctx context.Context, q *quotav1alpha1.TenantQuota, sel labels.Selector) (quota.Edits, error) {
	nsList := &metav1.PartialObjectMetadataList{}
	nsList.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NamespaceList"))
	if err := r.List(ctx, nsList); err != nil {
		return quota.Edits{}, fmt.Errorf("listing namespaces: %w", err)
	}
	selected := map[string]bool{}
	var members []quota.Member
	for _, ns := range nsList.Items {
		if !sel.Matches(labels.Set(ns.Labels)) {
			continue
		}
		selected[ns.Name] = true
		list := &workspacesv1.WorkspaceDeploymentList{}
		if err := r.List(ctx, list, client.InNamespace(ns.Name)); err != nil {
			return quota.Edits{}, fmt.Errorf("listing the workspaces of %s: %w", ns.Name, err)
		}
		for i := range list.Items {
			ws := &list.Items[i]
			if r.Sharded && !shard.HasBucket(ws.Labels) {
				// A summary without its status (not labelled yet, or its
				// label broken): not a member here; shard 0 checks its
				// charge on the API server.
				continue
			}
			m := quota.Member{Namespace: ws.Namespace, Name: ws.Name, UID: ws.UID, Deleting: !ws.DeletionTimestamp.IsZero()}
			if a := ws.Status.Admission; a != nil {
				c := quota.AdmissionRequest(ws, a).Charge(a.AdmittedAt)
				m.Admitted = &c
			} else if l := ws.Status.Lifecycle; l != nil && l.StopRequestedAt != nil {
				m.Stopped = true // it holds its place in the workspaces count
			}
			members = append(members, m)
		}
	}
	staleAfter := r.StaleChargeAfter
	if staleAfter == 0 {
		staleAfter = DefaultStaleChargeAfter
	}
	e := quota.Reconcile(q.Status.Charges, func(ns string) bool { return selected[ns] }, members, r.now(), staleAfter)
	for _, c := range e.Unknown {
		if !r.CheckUnknown || r.confirmedAlive(c.UID, staleAfter) {
			continue
		}
		ws := &workspacesv1.WorkspaceDeployment{}
		err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.Name}, ws)
		switch {
		case apierrors.IsNotFound(err) || (err == nil && ws.UID != c.UID):
			e.Remove = append(e.Remove, c)
		case err == nil:
			r.rememberAlive(c.UID, staleAfter)
		case err != nil:
			return quota.Edits{}, fmt.Errorf("reading workspace %s/%s: %w", c.Namespace, c.Name, err)
		}
	}
	return e, nil
}

// confirmedAlive reports whether, with shards, the workspace of uid was
// found on the API server less than ttl ago.
func (r *Reconciler) confirmedAlive(uid types.UID, ttl time.Duration) bool {
	if !r.Sharded {
		return false
	}
	r.aliveMu.Lock()
	defer r.aliveMu.Unlock()
	at, ok := r.alive[uid]
	if ok && r.now().Sub(at) >= ttl {
		delete(r.alive, uid)
		return false
	}
	return ok
}

// rememberAlive notes, with shards, that the workspace of uid exists; the
// notes older than ttl are dropped on the way.
func (r *Reconciler) rememberAlive(uid types.UID, ttl time.Duration) {
	if !r.Sharded {
		return
	}
	r.aliveMu.Lock()
	defer r.aliveMu.Unlock()
	if r.alive == nil {
		r.alive = map[types.UID]time.Time{}
	}
	now := r.now()
	for k, at := range r.alive {
		if now.Sub(at) >= ttl {
			delete(r.alive, k)
		}
	}
	r.alive[uid] = now
}

// now is the time on the reconciler's clock.
func (r *Reconciler) now() time.Time {
	if r.Clock != nil {
		return r.Clock.Now()
	}
	return time.Now()
}
