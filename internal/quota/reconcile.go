package quota

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/resources"
	"github.com/apiaryhq/apiary/internal/usage"
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

// Member is a workspace as a recount reads it: its name and its records.
type Member struct {
	Ref
	Records []workspacesv1.WorkspaceQuotaCharge
}

// Recount sets a quota's totals to what it counts of every workspace
// (Counted): its in-flight changes, an earlier Apiary's charges, and the
// records of members, against the spec's limits, which status.hard then
// holds. members must be every workspace that may hold a record of the
// quota, read after the quota: a record written after the quota was read
// belongs to a change that the quota, as read, lists in flight (a change
// is written to the quota before the record), or to one written after
// it, which makes the write of the recount conflict.
func Recount(q *quotav1alpha1.TenantQuota, members []Member) {
	q.Status.Totals = true
	q.Status.Hard = *q.Spec.Hard.DeepCopy()
	q.Status.Used = totalsOf(q.Status.Hard, CountedOf(q, members)).usage(q.Status.Hard)
}

// CountedOf is every charge a quota counts (Counted) of its members, and
// of workspaces it lists a change or an earlier Apiary's charge of that
// are not among them.
func CountedOf(q *quotav1alpha1.TenantQuota, members []Member) []quotav1alpha1.QuotaCharge {
	var counted []quotav1alpha1.QuotaCharge
	seen := map[types.UID]bool{}
	for _, m := range members {
		seen[m.UID] = true
		if c := Counted(q, m.Ref, m.Records); c != nil {
			counted = append(counted, *c)
		}
	}
	for _, t := range q.Status.Inflight {
		if !seen[t.UID] && t.Op == quotav1alpha1.ChargeOp {
			counted = append(counted, transitionCharge(t))
		}
	}
	for _, c := range q.Status.Charges {
		if !seen[c.UID] && FindInflight(q, c.UID) == nil {
			counted = append(counted, c)
		}
	}
	return counted
}

// HeldUsage is what a quota's charges hold now and since when, for its usage
// (usage.Now, usage.Window): every charge it counts of members.
func HeldUsage(q *quotav1alpha1.TenantQuota, members []Member) []usage.Held {
	var held []usage.Held
	for _, c := range CountedOf(q, members) {
		if r := RateOf(c); !r.IsZero() {
			held = append(held, usage.Held{Rate: r, Since: c.ChargedAt.Time})
		}
	}
	return held
}

// MembersByQuota groups workspaces by the quotas they may be counted in:
// those their records name, in one pass (a reader of every quota's
// usage). A quota's in-flight changes of workspaces with no record of it
// are counted from the quota itself (CountedOf).
func MembersByQuota(workspaces []workspacesv1.WorkspaceDeployment) map[string][]Member {
	out := map[string][]Member{}
	for i := range workspaces {
		w := &workspaces[i]
		for _, r := range w.Status.QuotaCharges {
			out[r.Quota] = append(out[r.Quota], Member{Ref: RefOf(w), Records: w.Status.QuotaCharges})
		}
	}
	return out
}

// Unsettled lists the workspaces a quota lists a change of, or an earlier
// Apiary's charge of, since before a time: the quota's controller looks
// each up, live.
func Unsettled(q *quotav1alpha1.TenantQuota, before time.Time) []Ref {
	var out []Ref
	for _, t := range q.Status.Inflight {
		if t.At.Time.Before(before) {
			out = append(out, Ref{Namespace: t.Namespace, Name: t.Name, UID: t.UID})
		}
	}
	for _, c := range q.Status.Charges {
		if c.ChargedAt.Time.Before(before) && FindInflight(q, c.UID) == nil {
			out = append(out, Ref{Namespace: c.Namespace, Name: c.Name, UID: c.UID})
		}
	}
	return out
}
