package workspace

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/index"
	"github.com/apiaryhq/apiary/internal/controller/reconciler"
	"github.com/apiaryhq/apiary/internal/quota"
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
	pc := w.priorityClass
	if pc == nil || pc.PreemptionPolicy != workspacesv1.PreemptLowerPriority || refusal == nil || refusal.Full {
		return proceed, false, nil
	}
	var q *quotav1alpha1.TenantQuota
	for _, o := range quotas {
		if o.Name == refusal.Quota {
			q = o
		}
	}
	if q == nil {
		return proceed, false, nil
	}
	defer r.quotaPreemptions.Lock(q.Name)()
	// A preemption gives the room to the head of the quota's queue: one
	// behind others preempts no one for them.
	if ahead, err := r.quotaQueueAhead(ctx, w.obj, []*quotav1alpha1.TenantQuota{q}, charge); err != nil || len(ahead) > 0 {
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
	var gone, mine []quotav1alpha1.QuotaCharge
	var cands []*workspacesv1.WorkspaceDeployment
	charges := map[*workspacesv1.WorkspaceDeployment]quotav1alpha1.QuotaCharge{}
	for i := range list.Items {
		s := r.written.Latest(&list.Items[i])
		counted := prior(q, s)
		if len(counted) == 0 || s.UID == w.obj.UID {
			continue
		}
		switch {
		case leaving(s):
			gone = append(gone, counted[0])
			if l := s.Status.Lifecycle; l.Preemption != nil && l.Preemption.By == key && l.StoppedAt == nil {
				mine = append(mine, counted[0])
			}
		case allow.allows(ctx, s):
			cands = append(cands, s)
			charges[s] = counted[0]
		}
	}
	if allow.err != nil {
		return stopWith(0), false, allow.err
	}
	sort.SliceStable(cands, func(i, j int) bool { return preferredVictim(cands[i], cands[j]) })
	candCharges := make([]quotav1alpha1.QuotaCharge, len(cands))
	for i, s := range cands {
		candCharges[i] = charges[s]
	}
	var self *quotav1alpha1.QuotaCharge
	if c := prior(q, w.obj); len(c) > 0 {
		self = &c[0]
	}
	p := quota.PreemptFor(q, self, gone, candCharges, charge)
	if len(p.Victims) == 0 {
		if p.Freeing && len(mine) > 0 {
			return r.quotaWait(w, workspacesv1.PreemptingReason, preemptingMessage(q.Name, namesOf(mine))), true, nil
		}
		if !allow.next.IsZero() {
			w.retry = sooner(w.retry, allow.next.Sub(now)+time.Second)
		}
		return proceed, false, nil
	}
	victims := make([]string, 0, len(p.Victims))
	for _, i := range p.Victims {
		if err := r.markPreempted(ctx, w, cands[i], now); err != nil {
			return stopWith(0), false, err
		}
		victims = append(victims, client.ObjectKeyFromObject(cands[i]).String())
	}
	log.FromContext(ctx).Info("preempting lower-priority workspaces for room in a TenantQuota", "quota", q.Name, "victims", victims)
	if r.EventRecorder != nil {
		r.EventRecorder.Eventf(w.obj, nil, corev1.EventTypeNormal, workspacesv1.PreemptingReason, "Preempt",
			"stopping %d workspace(s) of a lower priority to make room in TenantQuota %s: %s", len(victims), q.Name,
			reconciler.Enumerate(victims, ", ", 5))
	}
	return r.quotaWait(w, workspacesv1.PreemptingReason, preemptingMessage(q.Name, victims)), true, nil
}

func preemptingMessage(quotaName string, victims []string) string {
	return fmt.Sprintf("Waiting for room in TenantQuota %q: stopping %d workspace(s) of a lower priority to make room: %s",
		quotaName, len(victims), reconciler.Enumerate(victims, ", ", 5))
}

func namesOf(charges []quotav1alpha1.QuotaCharge) []string {
	out := make([]string, len(charges))
	for i, c := range charges {
		out[i] = c.Namespace + "/" + c.Name
	}
	sort.Strings(out)
	return out
}

// preferredVictim orders victims as admission.Preempt does: the lowest
// priority, then the youngest admission, then the key.
func preferredVictim(a, b *workspacesv1.WorkspaceDeployment) bool {
	switch pa, pb := priorityOf(a), priorityOf(b); {
	case pa != pb:
		return pa < pb
	case !a.Status.Admission.AdmittedAt.Equal(&b.Status.Admission.AdmittedAt):
		return a.Status.Admission.AdmittedAt.After(b.Status.Admission.AdmittedAt.Time)
	}
	return client.ObjectKeyFromObject(a).String() < client.ObjectKeyFromObject(b).String()
}
