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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/admission"
	"github.com/apiaryhq/apiary/internal/controller/index"
	"github.com/apiaryhq/apiary/internal/controller/reconciler"
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
// workspace's namespace. Under StrictFIFO a request waits while an older
// workspace waits for room in one of them on a limit it also needs; a
// refusal makes it wait with the quota's name and usage; a shrinking
// request always fits. Nothing to charge, nothing is written.
func (r *Reconciler) reserveQuotas(ctx context.Context, w *workspaceRun, quotas []*quotav1alpha1.TenantQuota,
	rec *workspacesv1.WorkspaceAdmission) (stepResult, error) {
	obj := w.obj
	if len(quotas) == 0 {
		conditions.Delete(obj, workspacesv1.QuotaReservedCondition)
		return proceed, nil
	}
	req := quota.AdmissionRequest(w.obj, rec)
	charge := req.Charge(metav1.NewTime(r.now()))
	names := make([]string, 0, len(quotas))
	var grows []*quotav1alpha1.TenantQuota
	for _, q := range quotas {
		names = append(names, q.Name)
		if old := quota.Find(q.Status.Charges, obj.UID); old == nil || !quota.SameAmounts(*old, charge) {
			grows = append(grows, q)
		}
	}
	if r.Policy == admission.StrictFIFO && len(grows) > 0 {
		ahead, err := r.quotaQueueAhead(ctx, obj, grows, charge)
		if err != nil {
			return stopWith(0), err
		}
		if len(ahead) > 0 {
			msg := fmt.Sprintf("Waiting behind older workspace(s) waiting for room in the same TenantQuota: %s", reconciler.Enumerate(ahead, ", ", 5))
			return r.quotaWait(w, workspacesv1.WaitingBehindOlderReason, msg), nil
		}
	}
	refusal, err := r.Ledger.Reserve(ctx, names, req)
	if refusal != nil {
		return r.quotaWait(w, workspacesv1.QuotaExceededReason, "Waiting for room in "+refusal.Error()), nil
	}
	if err != nil {
		if errors.Is(err, quota.ErrContended) {
			return stopWith(jitter.JitteredIntervalDuration(time.Second)), nil
		}
		return stopWith(0), fmt.Errorf("charging TenantQuotas: %w", err)
	}
	conditions.MarkTrue(obj, workspacesv1.QuotaReservedCondition, workspacesv1.QuotaReservedReason,
		"Charged to TenantQuota %s", strings.Join(names, ", "))
	return proceed, nil
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

// quotaQueueAhead lists the older workspaces waiting for room in one of
// the quotas that the charge waits behind (quota.Ahead).
func (r *Reconciler) quotaQueueAhead(ctx context.Context, obj *workspacesv1.WorkspaceDeployment,
	quotas []*quotav1alpha1.TenantQuota, charge quotav1alpha1.QuotaCharge) ([]string, error) {
	list := &workspacesv1.WorkspaceDeploymentList{}
	if err := r.List(ctx, list, client.MatchingFields{index.WorkspaceQuotaWait: "true"}); err != nil {
		return nil, fmt.Errorf("listing workspaces waiting for quotas: %w", err)
	}
	var older []*workspacesv1.WorkspaceDeployment
	for i := range list.Items {
		v := &list.Items[i]
		if v.UID != obj.UID && claimsPlace(v) && olderThan(v, obj) {
			older = append(older, v)
		}
	}
	if len(older) == 0 {
		return nil, nil
	}
	sort.Slice(older, func(i, j int) bool { return olderThan(older[i], older[j]) })
	labels := map[string]map[string]string{}
	ahead := map[string]bool{}
	for _, q := range quotas {
		var selected []*workspacesv1.WorkspaceDeployment
		var charges []quotav1alpha1.QuotaCharge
		for _, v := range older {
			if _, ok := labels[v.Namespace]; !ok {
				l, err := quota.NamespaceLabels(ctx, r.Client, v.Namespace)
				if err != nil {
					return nil, err
				}
				labels[v.Namespace] = l
			}
			if ok, _ := quota.Selects(q, labels[v.Namespace]); ok {
				selected = append(selected, v)
				charges = append(charges, r.waitingCharge(v))
			}
		}
		for _, i := range quota.Ahead(q, charges, charge) {
			ahead[selected[i].Namespace+"/"+selected[i].Name] = true
		}
	}
	out := make([]string, 0, len(ahead))
	for k := range ahead {
		out = append(out, k)
	}
	sort.Strings(out)
	return out, nil
}

// waitingCharge is what a waiting workspace would charge, from the
// resources stamped on its status.
func (r *Reconciler) waitingCharge(v *workspacesv1.WorkspaceDeployment) quotav1alpha1.QuotaCharge {
	return request.Of(*v.Status.ResolvedResources).Quota(v.Namespace, v.Name, v.UID).Charge(metav1.NewTime(r.now()))
}

// olderThan orders workspaces first come, first served: the time they
// queued (creation, or the start after a stop), then UID.
func olderThan(a, b *workspacesv1.WorkspaceDeployment) bool {
	qa, qb := lifecycle.QueuedAt(a), lifecycle.QueuedAt(b)
	if !qa.Equal(qb) {
		return qa.Before(qb)
	}
	return a.UID < b.UID
}
