package workspace

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/admission"
	"github.com/apiaryhq/apiary/internal/controller/index"
	"github.com/apiaryhq/apiary/internal/controller/reconciler"
	"github.com/apiaryhq/apiary/internal/quota"
	"github.com/apiaryhq/apiary/internal/workspace/lifecycle"
)

// Preemption for room in a TenantQuota (docs/admission.md "Preemption"):
// a workspace of a preempting priority that a quota refuses, with no one
// ahead of it in that quota's queue, stops the fewest running workspaces
// the quota counts, of its tenant and a lower priority, past their minimum
// runtime, whose stop gives back enough (quota.PreemptFor; a stopped
// workspace keeps its place in the workspaces count). The victims stop as
// any preempted workspace does (markPreempted, lifecycle).

// preemptForQuota looks for workspaces to stop for a charge a quota
// refused. preempting is set when the workspace waits for a preemption.
func (r *Reconciler) preemptForQuota(ctx context.Context, w *workspaceRun, quotas []*quotav1alpha1.TenantQuota,
	refusal *quota.Refusal, charge quotav1alpha1.QuotaCharge) (res stepResult, preempting bool, err error) {
	if refusal == nil || refusal.Full {
		return proceed, false, nil
	}
	var q *quotav1alpha1.TenantQuota
	for _, o := range quotas {
		if o.Name == refusal.Quota {
			q = o
		}
	}
	pc := w.priorityClass
	preempts := pc != nil && pc.PreemptionPolicy == workspacesv1.PreemptLowerPriority
	if q == nil || (!preempts && !quota.Lending(q)) {
		return proceed, false, nil
	}
	defer r.quotaPreemptions.Lock(q.Name)()
	// A preemption gives the room to the head of the quota's queue: one
	// behind others preempts no one for them.
	if behind, err := r.behindInQuota(ctx, w.obj, []*quotav1alpha1.TenantQuota{q}, charge); err != nil || behind {
		return proceed, false, err
	}
	key := client.ObjectKeyFromObject(w.obj).String()
	now := r.now()
	allow, err := r.victimRule(ctx, w, now)
	if err != nil {
		return stopWith(0), false, err
	}
	list := &workspacesv1.WorkspaceDeploymentList{}
	if err := r.List(ctx, list, client.MatchingFields{index.WorkspaceQuotaCharged: q.Name}); err != nil {
		return stopWith(0), false, fmt.Errorf("listing the workspaces TenantQuota %s counts: %w", q.Name, err)
	}
	type candidate struct {
		obj    *workspacesv1.WorkspaceDeployment
		charge quotav1alpha1.QuotaCharge
		loan   bool
	}
	loansHeld := false
	items := list.Items
	if r.Shards.Enabled() && quota.Lending(q) {
		elsewhere, err := r.borrowersElsewhere(ctx, q, items)
		if err != nil {
			return stopWith(0), false, err
		}
		items = append(items, elsewhere...)
	}
	var gone []quotav1alpha1.QuotaCharge
	var mine []string
	var cands []candidate
	for i := range items {
		s := r.written.Latest(&items[i])
		counted := prior(q, s)
		if len(counted) == 0 || s.UID == w.obj.UID {
			continue
		}
		switch {
		case leaving(s):
			gone = append(gone, counted[0])
			if stoppingFor(s, key) {
				mine = append(mine, client.ObjectKeyFromObject(s).String())
			}
		case quota.IsLoan(counted[0]):
			loansHeld = true
			if allow.reclaims(ctx, s) {
				cands = append(cands, candidate{obj: s, charge: counted[0], loan: true})
			}
		case preempts && allow.allows(ctx, s):
			cands = append(cands, candidate{obj: s, charge: counted[0]})
		}
	}
	if allow.err != nil {
		return stopWith(0), false, allow.err
	}
	// Loans first (Kueue's order: borrowers before the quota's own), then
	// the lowest priority, then the youngest.
	slices.SortStableFunc(cands, func(a, b candidate) int {
		if a.loan != b.loan {
			if a.loan {
				return -1
			}
			return 1
		}
		return admission.VictimOrder(lifecycle.Priority(a.obj), a.obj.Status.Admission.AdmittedAt.Time, client.ObjectKeyFromObject(a.obj).String(),
			lifecycle.Priority(b.obj), b.obj.Status.Admission.AdmittedAt.Time, client.ObjectKeyFromObject(b.obj).String())
	})
	candCharges := make([]quotav1alpha1.QuotaCharge, len(cands))
	for i, c := range cands {
		candCharges[i] = c.charge
	}
	var self *quotav1alpha1.QuotaCharge
	if c := prior(q, w.obj); len(c) > 0 {
		self = &c[0]
	}
	p := quota.PreemptFor(q, self, gone, candCharges, charge)
	if len(p.Victims) == 0 {
		if p.Freeing && len(mine) > 0 {
			slices.Sort(mine)
			return r.quotaWait(w, workspacesv1.PreemptingReason, preemptingMessage("room in TenantQuota "+strconv.Quote(q.Name), mine)), true, nil
		}
		if !allow.next.IsZero() {
			w.retry = sooner(w.retry, allow.next.Sub(now)+time.Second)
			if loansHeld && quota.FitsWithoutLoans(q, self, charge) {
				// The lender's nominal share comes back once the borrowers
				// ran their minimum time: say when.
				res := r.quotaWait(w, workspacesv1.ReclaimingReason, fmt.Sprintf(
					"Waiting for the GPUs TenantQuota %q lent to its cohort: the borrowers are stopped once they ran their minimum time, from %s",
					q.Name, allow.next.UTC().Format(time.RFC3339)))
				return res, true, nil
			}
		}
		return proceed, false, nil
	}
	victims := make([]*workspacesv1.WorkspaceDeployment, len(p.Victims))
	reclaim := false
	for i, j := range p.Victims {
		victims[i] = cands[j].obj
		reclaim = reclaim || cands[j].loan
	}
	room := "room in TenantQuota " + strconv.Quote(q.Name)
	if reclaim {
		room = "the GPUs TenantQuota " + strconv.Quote(q.Name) + " lent to its cohort"
	}
	keys, err := r.preemptVictims(ctx, w, victims, now, room)
	if err != nil {
		return stopWith(0), false, err
	}
	return r.quotaWait(w, workspacesv1.PreemptingReason, preemptingMessage(room, keys)), true, nil
}

func preemptingMessage(room string, victims []string) string {
	return fmt.Sprintf("Waiting for %s: stopping %d workspace(s) to make room: %s",
		room, len(victims), reconciler.Enumerate(victims, ", ", 5))
}
