package workspace

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/quota"
)

// Borrowing between the TenantQuotas of a cohort (docs/admission.md,
// "Cohorts"): an admission plans, with quota.Borrow, what its charge
// borrows from the other members of the cohorts of the quotas that select
// it; the loans are written with its charges in one Ledger.Sync, and kept,
// as its records say, while it runs. A stop ends them: a stopped
// workspace holds only its place in its own quotas.

// admissionWants are the quota writes of an admission: the charge, checked,
// in each quota that selects the workspace, first and in their order,
// then the loans it needs from their cohorts.
func (r *Reconciler) admissionWants(ctx context.Context, obj *workspacesv1.WorkspaceDeployment, quotas []*quotav1alpha1.TenantQuota,
	charge quotav1alpha1.QuotaCharge) ([]quota.Want, error) {
	inCohort := false
	for _, q := range quotas {
		inCohort = inCohort || q.Spec.Cohort != ""
	}
	if !inCohort {
		wants := make([]quota.Want, 0, len(quotas))
		for _, q := range quotas {
			wants = append(wants, quota.Want{Quota: q.Name, Charge: charge, Check: true})
		}
		return wants, nil
	}
	list := &quotav1alpha1.TenantQuotaList{}
	if err := r.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing TenantQuotas for the cohort: %w", err)
	}
	ref := quota.RefOf(obj)
	all := make([]*quotav1alpha1.TenantQuota, 0, len(list.Items))
	counted := map[string]*quotav1alpha1.QuotaCharge{}
	for i := range list.Items {
		q := &list.Items[i]
		all = append(all, q)
		counted[q.Name] = quota.Counted(q, ref, obj.Status.QuotaCharges)
	}
	return quota.Borrow(quotas, all, counted, charge).Wants(quotas, true), nil
}

// keptWants are the quota writes that keep what a workspace holds,
// unchecked: in each quota that selects it, its charge with what its record
// there says it borrows, and each loan its records hold from a quota that
// still exists; a stopped (held) workspace holds only its place, and its
// loans end.
func (r *Reconciler) keptWants(ctx context.Context, obj *workspacesv1.WorkspaceDeployment, quotas []*quotav1alpha1.TenantQuota,
	charge quotav1alpha1.QuotaCharge, held bool) ([]quota.Want, error) {
	own := map[string]bool{}
	wants := make([]quota.Want, 0, len(quotas))
	for _, q := range quotas {
		own[q.Name] = true
		c := charge
		if rec := quota.RecordOf(obj.Status.QuotaCharges, q); rec != nil && !rec.Released && !held {
			c.Borrowed = rec.Borrowed
		}
		wants = append(wants, quota.Want{Quota: q.Name, Charge: c})
	}
	if held {
		return wants, nil
	}
	for _, rec := range obj.Status.QuotaCharges {
		if own[rec.Quota] || rec.Released || len(rec.Lent) == 0 {
			continue
		}
		lender := &quotav1alpha1.TenantQuota{}
		if err := r.Get(ctx, client.ObjectKey{Name: rec.Quota}, lender); err != nil {
			if client.IgnoreNotFound(err) != nil {
				return nil, fmt.Errorf("reading TenantQuota %s, which lends GPUs to the workspace: %w", rec.Quota, err)
			}
			continue
		}
		if lender.UID != rec.QuotaUID {
			continue
		}
		loan := quotav1alpha1.QuotaCharge{Namespace: obj.Namespace, Name: obj.Name, UID: obj.UID, Lent: rec.Lent}
		if rec.Since != nil {
			loan.ChargedAt = *rec.Since
		}
		wants = append(wants, quota.Want{Quota: rec.Quota, Charge: loan})
	}
	return wants, nil
}

// borrowersElsewhere lists, live and a page at a time, the workspaces that
// hold a loan from q and that this shard does not cache (cached): with
// --shards, a borrower may run on another shard's cluster, and a lender
// takes its share back from borrowers on every shard. The stop's intent
// is written onto the borrower's status, with its resourceVersion, as for
// any preemption; the borrower's own shard stops it.
func (r *Reconciler) borrowersElsewhere(ctx context.Context, q *quotav1alpha1.TenantQuota,
	cached []workspacesv1.WorkspaceDeployment) ([]workspacesv1.WorkspaceDeployment, error) {
	if r.APIReader == nil {
		return nil, nil
	}
	seen := make(map[types.UID]bool, len(cached))
	for i := range cached {
		seen[cached[i].UID] = true
	}
	var out []workspacesv1.WorkspaceDeployment
	opts := &client.ListOptions{Limit: 500}
	for {
		page := &workspacesv1.WorkspaceDeploymentList{}
		if err := r.APIReader.List(ctx, page, opts); err != nil {
			return nil, fmt.Errorf("listing the borrowers of TenantQuota %s on other shards: %w", q.Name, err)
		}
		for i := range page.Items {
			w := &page.Items[i]
			if rec := quota.RecordOf(w.Status.QuotaCharges, q); !seen[w.UID] && rec != nil && !rec.Released && len(rec.Lent) > 0 {
				out = append(out, *w)
			}
		}
		if page.Continue == "" {
			return out, nil
		}
		opts.Continue = page.Continue
	}
}
