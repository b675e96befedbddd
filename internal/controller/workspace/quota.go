package workspace

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/fluxcd/pkg/runtime/jitter"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/admission"
	"github.com/apiaryhq/apiary/internal/controller/index"
	"github.com/apiaryhq/apiary/internal/quota"
	"github.com/apiaryhq/apiary/internal/wake"
	"github.com/apiaryhq/apiary/internal/workspace/lifecycle"
	"github.com/apiaryhq/apiary/internal/workspace/request"
)

// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch
// +kubebuilder:rbac:groups=quota.apiary.dev,resources=tenantquotas,verbs=get;list;watch
// +kubebuilder:rbac:groups=quota.apiary.dev,resources=tenantquotas/status,verbs=get;update;patch

// quotasOf returns the TenantQuotas that select a namespace; none when
// quotas are not enforced.
func (r *Reconciler) quotasOf(ctx context.Context, namespace string) ([]*quotav1alpha1.TenantQuota, error) {
	if r.Ledger == nil {
		return nil, nil
	}
	return quota.Of(ctx, r.Client, namespace)
}

// reserveQuotas charges an admission record to the quotas that select the
// workspace's namespace, and releases what other quotas count of it.
// Under StrictFIFO a request waits while an older workspace waits for room
// in one of them on a limit it also needs; a refusal makes it wait with
// the quota's name and usage; a shrinking request always fits. Nothing to
// charge, nothing is written.
func (r *Reconciler) reserveQuotas(ctx context.Context, w *workspaceRun, quotas []*quotav1alpha1.TenantQuota,
	rec *workspacesv1.WorkspaceAdmission) (stepResult, error) {
	obj := w.obj
	if r.Ledger == nil {
		conditions.Delete(obj, workspacesv1.QuotaReservedCondition)
		return proceed, nil
	}
	req := quota.AdmissionRequest(w.obj, rec)
	charge := req.Charge(metav1.NewTime(r.now()))
	names := make([]string, 0, len(quotas))
	var grows []*quotav1alpha1.TenantQuota
	wants, err := r.admissionWants(ctx, obj, quotas, charge)
	if err != nil {
		return stopWith(0), err
	}
	for _, want := range wants[:len(quotas)] {
		q := quotas[len(names)]
		names = append(names, q.Name)
		if old := quota.Counted(q, quota.RefOf(obj), obj.Status.QuotaCharges); old == nil || !quota.SameAmounts(*old, want.Charge) {
			grows = append(grows, q)
		}
	}
	if r.Policy == admission.StrictFIFO && len(grows) > 0 {
		behind, err := r.behindInQuota(ctx, obj, grows, charge)
		if err != nil {
			return stopWith(0), err
		}
		if behind {
			msg := "Waiting behind workspace(s) ahead in the queue (of a higher priority, or older) waiting for room in the same TenantQuota; " + queuePlaceHint
			return r.quotaWait(w, workspacesv1.WaitingBehindOlderReason, msg), nil
		}
	}
	refusal, err := r.syncQuotas(ctx, w, wants)
	if refusal != nil {
		if res, preempting, err := r.preemptForQuota(ctx, w, quotas, refusal, charge); preempting || err != nil {
			return res, err
		}
		return r.quotaWait(w, workspacesv1.QuotaExceededReason, "Waiting for room in "+refusal.Error()), nil
	}
	if err != nil {
		if errors.Is(err, quota.ErrContended) || errors.Is(err, quota.ErrInflightFull) {
			return stopWith(jitter.JitteredIntervalDuration(time.Second)), nil
		}
		return stopWith(0), fmt.Errorf("charging TenantQuotas: %w", err)
	}
	if len(quotas) == 0 {
		conditions.Delete(obj, workspacesv1.QuotaReservedCondition)
		return proceed, nil
	}
	conditions.MarkTrue(obj, workspacesv1.QuotaReservedCondition, workspacesv1.QuotaReservedReason,
		"Charged to TenantQuota %s", strings.Join(names, ", "))
	return proceed, nil
}

// keepQuotas makes the quotas that select a workspace count the charge it
// holds (unchecked: it runs already, admitted before a quota selected it),
// or its place in the workspaces count when it is stopped (held), and the
// others release it.
func (r *Reconciler) keepQuotas(ctx context.Context, w *workspaceRun, quotas []*quotav1alpha1.TenantQuota, held bool) error {
	if r.Ledger == nil {
		return nil
	}
	obj := w.obj
	var charge quotav1alpha1.QuotaCharge
	switch a := obj.Status.Admission; {
	case held || a == nil:
		charge = quota.Held(quotav1alpha1.QuotaCharge{Namespace: obj.Namespace, Name: obj.Name, UID: obj.UID})
	default:
		charge = quota.AdmissionRequest(obj, a).Charge(a.AdmittedAt)
	}
	wants, err := r.keptWants(ctx, obj, quotas, charge, held)
	if err != nil {
		return err
	}
	if _, err := r.syncQuotas(ctx, w, wants); err != nil {
		return fmt.Errorf("counting the workspace in its TenantQuotas: %w", err)
	}
	return nil
}

// releaseQuotas makes every quota release the workspace (it is deleted).
func (r *Reconciler) releaseQuotas(ctx context.Context, w *workspaceRun) error {
	if r.Ledger == nil {
		return nil
	}
	if _, err := r.syncQuotas(ctx, w, nil); err != nil {
		return fmt.Errorf("releasing the workspace's quota charges: %w", err)
	}
	return nil
}

// syncQuotas makes the wanted quotas count the workspace as wanted and
// every other quota that counts it release it (quota.Ledger.Sync), and
// takes the records to write on its status; the changes they carry leave
// the quotas once the status is written (quota.Ledger.Settle). Nothing is
// written when the cache says the quotas count the workspace as wanted
// and its records say so.
func (r *Reconciler) syncQuotas(ctx context.Context, w *workspaceRun, wants []quota.Want) (*quota.Refusal, error) {
	obj := w.obj
	ref := quota.RefOf(obj)
	holders, err := quota.Holders(ctx, r.Client, ref, obj.Status.QuotaCharges)
	if err != nil {
		return nil, err
	}
	wanted := map[string]quota.Want{}
	for _, want := range wants {
		wanted[want.Quota] = want
	}
	var leave []string
	needed := false
	for _, q := range holders {
		if _, ok := wanted[q.Name]; !ok {
			leave = append(leave, q.Name)
			needed = true
		}
	}
	if !needed {
		needed, err = r.quotasDiffer(ctx, w, wants)
		if err != nil || !needed {
			return nil, err
		}
	}
	records, refusal, err := r.Ledger.Sync(ctx, obj, obj.Status.QuotaCharges, wants, leave)
	obj.Status.QuotaCharges = records
	w.quotaRecords = true
	return refusal, err
}

// quotasDiffer reports whether a wanted quota, as cached, counts the
// workspace otherwise than wanted, lists a change of it its records do not
// carry, or still lists an earlier Apiary's charge of it. Changes its
// records carry are settled (they leave with the quota's next write).
func (r *Reconciler) quotasDiffer(ctx context.Context, w *workspaceRun, wants []quota.Want) (bool, error) {
	obj := w.obj
	ref := quota.RefOf(obj)
	for _, want := range wants {
		q := &quotav1alpha1.TenantQuota{}
		if err := r.Get(ctx, client.ObjectKey{Name: want.Quota}, q); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		cur := quota.Counted(q, ref, obj.Status.QuotaCharges)
		if cur == nil || !quota.SameAmounts(*cur, want.Charge) || quota.Find(q.Status.Charges, obj.UID) != nil {
			return true, nil
		}
		if t := quota.FindInflight(q, obj.UID); t != nil {
			if !quota.Settled(*t, obj.Status.QuotaCharges, q) {
				return true, nil
			}
			r.Ledger.Settle(obj.UID, obj.Status.QuotaCharges)
		}
	}
	return false, nil
}

// quotaWait puts a workspace in Waiting for a quota. It holds no GPUs for
// the request meanwhile, so QuotaReserved alone says why it waits.
func (r *Reconciler) quotaWait(w *workspaceRun, reason, msg string) stepResult {
	conditions.MarkFalse(w.obj, workspacesv1.QuotaReservedCondition, reason, "%s", msg)
	conditions.Delete(w.obj, workspacesv1.GPUCapacityCondition)
	waiting(w, msg)
	w.waitFor(wake.Topic{Kind: waitQuota})
	return stopWith(jitter.JitteredIntervalDuration(waitingResync))
}

// behindInQuota reports whether an older workspace waits for room in one
// of the quotas that the charge would wait behind (quota.Ahead).
func (r *Reconciler) behindInQuota(ctx context.Context, obj *workspacesv1.WorkspaceDeployment,
	quotas []*quotav1alpha1.TenantQuota, charge quotav1alpha1.QuotaCharge) (bool, error) {
	list := &workspacesv1.WorkspaceDeploymentList{}
	if err := r.List(ctx, list, client.MatchingFields{index.WorkspaceQuotaWait: "true"}); err != nil {
		return false, fmt.Errorf("listing workspaces waiting for quotas: %w", err)
	}
	var older []*workspacesv1.WorkspaceDeployment
	for i := range list.Items {
		v := &list.Items[i]
		if v.UID != obj.UID && lifecycle.ClaimsPlace(v) && lifecycle.QueuedBefore(v, obj) {
			older = append(older, v)
		}
	}
	if len(older) == 0 {
		return false, nil
	}
	sort.Slice(older, func(i, j int) bool { return lifecycle.QueuedBefore(older[i], older[j]) })
	labels := map[string]map[string]string{}
	for _, q := range quotas {
		var charges []quotav1alpha1.QuotaCharge
		counted := prior(q, obj)
		for _, v := range older {
			if _, ok := labels[v.Namespace]; !ok {
				l, err := quota.NamespaceLabels(ctx, r.Client, v.Namespace)
				if err != nil {
					return false, err
				}
				labels[v.Namespace] = l
			}
			if ok, _ := quota.Selects(q, labels[v.Namespace]); ok {
				charges = append(charges, r.waitingCharge(v))
				counted = append(counted, prior(q, v)...)
			}
		}
		if len(quota.Ahead(q, counted, charges, charge)) > 0 {
			return true, nil
		}
	}
	return false, nil
}

// prior is what a quota counts of a workspace now, as cached.
func prior(q *quotav1alpha1.TenantQuota, v *workspacesv1.WorkspaceDeployment) []quotav1alpha1.QuotaCharge {
	if c := quota.Counted(q, quota.RefOf(v), v.Status.QuotaCharges); c != nil {
		return []quotav1alpha1.QuotaCharge{*c}
	}
	return nil
}

// waitingCharge is what a waiting workspace would charge, from the
// resources stamped on its status.
func (r *Reconciler) waitingCharge(v *workspacesv1.WorkspaceDeployment) quotav1alpha1.QuotaCharge {
	return request.Of(*v.Status.ResolvedResources).Quota(v.Namespace, v.Name, v.UID).Charge(metav1.NewTime(r.now()))
}

// namespaceChanged maps a namespace's label change (which quotas select
// it) to the workspaces waiting for a quota and to the namespace's
// workspaces, which quotas may now count or release.
func (r *Reconciler) namespaceChanged(ctx context.Context, o client.Object) []reconcile.Request {
	out := r.quotaWaiters(ctx, o)
	list := &workspacesv1.WorkspaceDeploymentList{}
	if err := r.List(ctx, list, client.InNamespace(o.GetName())); err != nil {
		return out
	}
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return out
}

// quotaMembers maps a quota to the workspaces, in this cache, of the
// namespaces it selects, and, with listed, to those it lists in flight or
// in an earlier Apiary's charges (a new manager's first look).
func (r *Reconciler) quotaMembers(ctx context.Context, q *quotav1alpha1.TenantQuota, listed bool) []reconcile.Request {
	var out []reconcile.Request
	if listed {
		for _, c := range q.Status.Charges {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: c.Namespace, Name: c.Name}})
		}
	}
	sel, err := metav1.LabelSelectorAsSelector(&q.Spec.NamespaceSelector)
	if err != nil {
		return out
	}
	nsList := &metav1.PartialObjectMetadataList{}
	nsList.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NamespaceList"))
	if err := r.List(ctx, nsList, client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return out
	}
	for _, ns := range nsList.Items {
		list := &workspacesv1.WorkspaceDeploymentList{}
		if err := r.List(ctx, list, client.InNamespace(ns.Name)); err != nil {
			continue
		}
		for i := range list.Items {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return out
}
