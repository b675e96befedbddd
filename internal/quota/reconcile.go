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
	q.Status.Used = totalsOf(q.Status.Hard, counted).usage(q.Status.Hard)
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
