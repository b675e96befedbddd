package tenantquota

import (
	"context"
	"fmt"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/fluxcd/pkg/runtime/predicates"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
)

// DefaultStaleChargeAfter is how long a change stays in a quota's
// in-flight list before the controller looks its workspace up: the
// workspace's own reconciler and its Ledger settle it well before.
const DefaultStaleChargeAfter = 30 * time.Second

// maxLookups bounds the workspaces looked up, live, in one reconcile.
const maxLookups = 256

// Reconciler keeps a TenantQuota's status: the limits enforced, the
// summary and conditions, a recount of its totals when its GPU limits
// change, and the changes in flight that their workspaces settled or that
// belong to workspaces that are gone. It never reads all workspaces from
// the cache: each workspace charges, holds and releases its own share
// (internal/quota), on whichever shard reconciles it. Every write goes
// through the same optimistic Ledger, so none is lost.
type Reconciler struct {
	client.Client
	// APIReader reads workspaces live: those a quota lists in flight, and
	// all of them for a recount.
	APIReader     client.Reader
	EventRecorder events.EventRecorder
	Ledger        *quota.Ledger
	// StaleChargeAfter is DefaultStaleChargeAfter when zero.
	StaleChargeAfter time.Duration
	// Clock ages in-flight changes; the wall clock when nil. It must be
	// the workspace reconciler's, whose changes it ages.
	Clock clock.PassiveClock
}

// Options configure the TenantQuota controller.
type Options struct {
	MaxConcurrentReconciles int
}

// SetupWithManager registers the TenantQuota controller. It reacts to its
// quotas' spec and to the deletion of workspaces a quota lists in flight.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts Options) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("tenantquota").
		For(&quotav1alpha1.TenantQuota{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicates.ReconcileRequestedPredicate{}))).
		Watches(&workspacesv1.WorkspaceDeployment{}, handler.EnqueueRequestsFromMapFunc(r.listingQuotas),
			builder.WithPredicates(predicate.Funcs{
				CreateFunc:  func(event.CreateEvent) bool { return false },
				DeleteFunc:  func(event.DeleteEvent) bool { return true },
				GenericFunc: func(event.GenericEvent) bool { return false },
				UpdateFunc:  func(event.UpdateEvent) bool { return false },
			})).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(opts.MaxConcurrentReconciles, 1)}).
		Complete(r)
}

// listingQuotas maps a workspace that goes to the quotas that list it in
// flight or in an earlier Apiary's charges.
func (r *Reconciler) listingQuotas(ctx context.Context, o client.Object) []reconcile.Request {
	list := &quotav1alpha1.TenantQuotaList{}
	if err := r.List(ctx, list); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		q := &list.Items[i]
		if quota.FindInflight(q, o.GetUID()) != nil || quota.Find(q.Status.Charges, o.GetUID()) != nil {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(q)})
		}
	}
	return out
}

// Reconcile is the entry point of a TenantQuota's reconciliation.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	q := &quotav1alpha1.TenantQuota{}
	if err := r.Get(ctx, req.NamespacedName, q); err != nil {
		return ctrl.Result{}, reconciler.IgnoreGone(metrics.KindTenantQuota, req, err)
	}
	defer metrics.ObserveReconcile(metrics.KindTenantQuota, req.NamespacedName, time.Now())
	if !q.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // its waiters are woken by the deletion; records of it count nothing
	}
	_, selErr := metav1.LabelSelectorAsSelector(&q.Spec.NamespaceSelector)
	if selErr != nil && r.EventRecorder != nil && !conditions.IsStalled(q) {
		r.EventRecorder.Eventf(q, nil, corev1.EventTypeWarning, quotav1alpha1.InvalidSelectorReason, "Reconcile", "%s", selErr)
	}
	err := r.Ledger.Write(ctx, q.Name, func(cur *quotav1alpha1.TenantQuota) bool {
		before := cur.Status.DeepCopy()
		if cur.Generation != q.Generation {
			return false // a newer spec is queued already
		}
		markQuota(cur, selErr)
		quota.Refresh(cur)
		return !equality.Semantic.DeepEqual(before, &cur.Status)
	})
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("writing the status of TenantQuota %s: %w", q.Name, err)
	}
	requested, asked := meta.ReconcileAnnotationValue(q.GetAnnotations())
	asked = asked && requested != q.Status.LastHandledReconcileAt
	if quota.Recounting(q) || !q.Status.Totals || asked {
		if done, err := r.recount(ctx, q.Name, requested, asked); err != nil || !done {
			return ctrl.Result{RequeueAfter: time.Second}, err
		}
	}
	return r.settle(ctx, q.Name)
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

// settle looks up, live, the workspaces whose changes a quota has listed
// in flight for longer than StaleChargeAfter (and those an earlier Apiary
// charged): a change whose token the workspace's record carries leaves
// the list (the process that wrote it died before it dropped it); the
// change or charge of a workspace that is gone leaves the list and the
// totals. Any other is the workspace's own to finish, on its next
// reconcile.
func (r *Reconciler) settle(ctx context.Context, name string) (ctrl.Result, error) {
	q := &quotav1alpha1.TenantQuota{}
	if err := r.Get(ctx, client.ObjectKey{Name: name}, q); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	staleAfter := r.StaleChargeAfter
	if staleAfter == 0 {
		staleAfter = DefaultStaleChargeAfter
	}
	refs := quota.Unsettled(q, r.now().Add(-staleAfter))
	if len(refs) > maxLookups {
		refs = refs[:maxLookups]
	}
	gone := map[types.UID]bool{}
	settled := map[types.UID][]workspacesv1.WorkspaceQuotaCharge{}
	for _, ref := range refs {
		ws := &workspacesv1.WorkspaceDeployment{}
		err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, ws)
		switch {
		case apierrors.IsNotFound(err) || (err == nil && ws.UID != ref.UID):
			gone[ref.UID] = true
		case err != nil:
			return ctrl.Result{}, fmt.Errorf("reading workspace %s/%s: %w", ref.Namespace, ref.Name, err)
		default:
			settled[ref.UID] = ws.Status.QuotaCharges
		}
	}
	if len(gone)+len(settled) > 0 {
		at := metav1.NewTime(r.now().Truncate(time.Second))
		err := r.Ledger.Write(ctx, name, func(cur *quotav1alpha1.TenantQuota) bool {
			changed := false
			for uid := range gone {
				changed = quota.Forget(cur, uid, at) || changed
			}
			for uid, records := range settled {
				if t := quota.FindInflight(cur, uid); t != nil && quota.Settled(*t, records, cur) {
					changed = quota.Drop(cur, uid, t.Token) || changed
				}
			}
			return changed
		})
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("settling the changes in flight of TenantQuota %s: %w", name, err)
		}
	}
	if len(q.Status.Inflight)+len(q.Status.Charges) > 0 {
		return ctrl.Result{RequeueAfter: staleAfter}, nil
	}
	return ctrl.Result{}, nil
}

// recount sets a quota's totals anew from every workspace, read live (a
// shard's cache holds only its own), after its GPU limits changed, or when
// a reconcile was requested (asked; the annotation's value is recorded):
// the repair of a share lost with a workspace removed without its
// finalizer. It
// writes with the resourceVersion of the quota it read before listing:
// any change of what the quota counts meanwhile makes it conflict, and
// it starts over (quota.Recount). It reports whether it wrote.
func (r *Reconciler) recount(ctx context.Context, name, requested string, asked bool) (bool, error) {
	for range 4 {
		q := &quotav1alpha1.TenantQuota{}
		if err := r.APIReader.Get(ctx, client.ObjectKey{Name: name}, q); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		if q.Status.Totals && !quota.Recounting(q) && (!asked || q.Status.LastHandledReconcileAt == requested) {
			return true, nil
		}
		quota.EnsureTotals(q)
		var members []quota.Member
		list := &workspacesv1.WorkspaceDeploymentList{}
		for cont := ""; ; {
			if err := r.APIReader.List(ctx, list, client.Limit(500), client.Continue(cont)); err != nil {
				return false, fmt.Errorf("listing workspaces to recount TenantQuota %s: %w", name, err)
			}
			for i := range list.Items {
				ws := &list.Items[i]
				members = append(members, quota.Member{Ref: quota.RefOf(ws), Records: ws.Status.QuotaCharges})
			}
			if cont = list.Continue; cont == "" {
				break
			}
		}
		quota.Recount(q, members)
		quota.Refresh(q)
		if asked {
			q.Status.LastHandledReconcileAt = requested
		}
		err := r.Client.Status().Update(ctx, q)
		switch {
		case err == nil:
			return true, nil
		case apierrors.IsConflict(err):
			continue
		default:
			return false, fmt.Errorf("writing the recount of TenantQuota %s: %w", name, err)
		}
	}
	return false, nil
}

// now is the time on the reconciler's clock.
func (r *Reconciler) now() time.Time {
	if r.Clock != nil {
		return r.Clock.Now()
	}
	return time.Now()
}
