package quota

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/resources"
)

// AdmissionRequest is what a workspace's admission charges its quotas, as
// resources.AdmissionCharge counts it. A record that does not describe a
// charge is charged as the most it could hold, which blocks its tenant
// rather than under-count it; resources.AdmissionCharge names the field.
func AdmissionRequest(ws metav1.Object, a *workspacesv1.WorkspaceAdmission) Request {
	c, _ := resources.AdmissionCharge(a)
	return Request{Namespace: ws.GetNamespace(), Name: ws.GetName(), UID: ws.GetUID(),
		GPUs: c.GPUs, ResourceName: a.ResourceName, Selector: a.Selector, CPU: c.CPU, Memory: c.Memory}
}

// Member is a workspace of a namespace a quota selects, as the quota's
// controller sees it in the cache.
type Member struct {
	Namespace, Name string
	UID             types.UID
	// Admitted is the charge of its admission in force; nil when it has none.
	Admitted *quotav1alpha1.QuotaCharge
	// Deleting workspaces release their charges themselves.
	Deleting bool
	// Stopped is true for a workspace that stopped and gave its admission
	// back (Admitted is nil): it holds a Held charge, its place in the
	// workspaces count.
	Stopped bool
}

// Edits are the corrections of a ledger: charges to remove (as they were
// seen, so a charge rewritten meanwhile is left alone) and to put in place.
type Edits struct {
	Remove []quotav1alpha1.QuotaCharge
	Put    []quotav1alpha1.QuotaCharge
	// Unknown are charges of workspaces the cache does not hold: the
	// caller removes those whose workspace is gone on the API server.
	Unknown []quotav1alpha1.QuotaCharge
	// RequeueAfter is when a charge now too young to correct will be old enough.
	RequeueAfter time.Duration
}

// Reconcile compares a ledger with the workspaces a quota selects:
//   - a charge of a namespace the quota no longer selects goes;
//   - an admitted workspace without a charge gets its admission's charge,
//     unchecked: it runs already (a quota created, or a namespace that
//     joined the tenant, after its admission), and lowering or adding a
//     quota evicts nothing;
//   - a stopped workspace (its admission given back) holds a Held charge,
//     its place in the workspaces count, put unchecked when missing;
//   - a charge that no admission in force accounts for is corrected once
//     older than staleAfter: a workspace writes its charge before its
//     status, and the charge of a workspace that stopped between the two
//     would otherwise stay forever.
func Reconcile(ledger []quotav1alpha1.QuotaCharge, selected func(namespace string) bool, members []Member,
	now time.Time, staleAfter time.Duration) Edits {
	var e Edits
	byUID := make(map[types.UID]*Member, len(members))
	for i := range members {
		byUID[members[i].UID] = &members[i]
	}
	charged := map[types.UID]bool{}
	for _, c := range ledger {
		charged[c.UID] = true
		m := byUID[c.UID]
		switch {
		case !selected(c.Namespace):
			e.Remove = append(e.Remove, c)
		case m == nil:
			e.Unknown = append(e.Unknown, c)
		case m.Deleting:
		case m.Admitted != nil && SameAmounts(c, *m.Admitted):
		case m.Admitted == nil && m.Stopped && IsHeld(c):
		default:
			if age := now.Sub(c.ChargedAt.Time); age < staleAfter {
				e.requeue(staleAfter - age)
				continue
			}
			switch {
			case m.Admitted != nil:
				e.Put = append(e.Put, *m.Admitted)
			case m.Stopped:
				e.Put = append(e.Put, Held(c))
			default:
				e.Remove = append(e.Remove, c)
			}
		}
	}
	for _, m := range members {
		if charged[m.UID] || m.Deleting || !selected(m.Namespace) {
			continue
		}
		switch {
		case m.Admitted != nil:
			e.Put = append(e.Put, *m.Admitted)
		case m.Stopped: // stopped before it was held (an older Apiary), or joined the tenant stopped
			e.Put = append(e.Put, quotav1alpha1.QuotaCharge{Namespace: m.Namespace, Name: m.Name, UID: m.UID,
				ChargedAt: metav1.NewTime(now)})
		}
	}
	return e
}

func (e *Edits) requeue(d time.Duration) {
	if e.RequeueAfter == 0 || d < e.RequeueAfter {
		e.RequeueAfter = d
	}
}

// Apply makes the edits on a ledger as it is now: a charge is removed only
// while it is still the one seen, and put only where the workspace's charge
// is still the one seen (or still missing), so a charge rewritten by the
// workspace meanwhile stands. It reports whether anything changed.
func (e Edits) Apply(q *quotav1alpha1.TenantQuota, seen []quotav1alpha1.QuotaCharge) bool {
	changed := false
	for _, c := range e.Remove {
		if cur := Find(q.Status.Charges, c.UID); cur != nil && SameAmounts(*cur, c) && cur.ChargedAt.Equal(&c.ChargedAt) {
			q.Status.Charges, _ = Remove(q.Status.Charges, c.UID)
			changed = true
		}
	}
	for _, c := range e.Put {
		cur, was := Find(q.Status.Charges, c.UID), Find(seen, c.UID)
		if (cur == nil && was == nil) || (cur != nil && was != nil && cur.ChargedAt.Equal(&was.ChargedAt) && SameAmounts(*cur, *was)) {
			q.Status.Charges = Upsert(q.Status.Charges, c)
			changed = true
		}
	}
	return changed
}
