package quota

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"slices"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/usage"
)

// ErrInflightFull is returned when a quota lists MaxInflight changes that
// the workspaces have not recorded yet; the caller backs off.
var ErrInflightFull = errors.New("the quota has too many changes in flight")

// Ref names a workspace.
type Ref struct {
	Namespace, Name string
	UID             types.UID
}

// RefOf is the Ref of a workspace.
func RefOf(o metav1.Object) Ref {
	return Ref{Namespace: o.GetNamespace(), Name: o.GetName(), UID: o.GetUID()}
}

// FindInflight returns a quota's in-flight change of a workspace, or nil.
func FindInflight(q *quotav1alpha1.TenantQuota, uid types.UID) *quotav1alpha1.QuotaTransition {
	for i := range q.Status.Inflight {
		if q.Status.Inflight[i].UID == uid {
			return &q.Status.Inflight[i]
		}
	}
	return nil
}

// RecordOf returns a workspace's record of its charge in a quota (by name
// and UID), or nil.
func RecordOf(records []workspacesv1.WorkspaceQuotaCharge, q *quotav1alpha1.TenantQuota) *workspacesv1.WorkspaceQuotaCharge {
	for i := range records {
		if records[i].Quota == q.Name && records[i].QuotaUID == q.UID {
			return &records[i]
		}
	}
	return nil
}

// Counted is what a quota counts of a workspace, nil when nothing: its
// in-flight change while there is one, else its charge in an earlier
// Apiary's list (status.charges), else the workspace's own record. Used
// is always the sum of Counted over every workspace; records must be the
// workspace's current ones when the quota lists no change of it.
func Counted(q *quotav1alpha1.TenantQuota, ref Ref, records []workspacesv1.WorkspaceQuotaCharge) *quotav1alpha1.QuotaCharge {
	if t := FindInflight(q, ref.UID); t != nil {
		if t.Op == quotav1alpha1.ReleaseOp {
			return nil
		}
		c := transitionCharge(*t)
		return &c
	}
	if c := Find(q.Status.Charges, ref.UID); c != nil {
		out := *c.DeepCopy()
		return &out
	}
	if r := RecordOf(records, q); r != nil && !r.Released {
		c := recordCharge(ref, *r)
		return &c
	}
	return nil
}

// Settled reports whether a quota's in-flight change of a workspace is
// on the workspace's record: the record carries its token. A record is
// written only after the change it carries, and a later change replaces
// the in-flight entry with a new token, so a record seen with the entry's
// token, however old the copy it was read from, proves it.
func Settled(t quotav1alpha1.QuotaTransition, records []workspacesv1.WorkspaceQuotaCharge, q *quotav1alpha1.TenantQuota) bool {
	r := RecordOf(records, q)
	return r != nil && r.Token == t.Token
}

// Move changes what a quota counts of a workspace from base (what it
// counts now, Counted) to to (nil: nothing), in its totals, and lists the
// change in flight under a new token, which it returns. An earlier
// Apiary's charge of the workspace leaves the list: the change replaces
// it. The quota must keep totals (EnsureTotals).
func Move(q *quotav1alpha1.TenantQuota, ref Ref, base, to *quotav1alpha1.QuotaCharge, at metav1.Time) (string, error) {
	if FindInflight(q, ref.UID) == nil && len(q.Status.Inflight) >= quotav1alpha1.MaxInflight {
		return "", ErrInflightFull
	}
	t := usedTotals(q)
	if base != nil {
		t.put(amountsOf(q.Status.Hard, base), -1)
		closeUsage(q, base, at)
	}
	if to != nil {
		t.put(amountsOf(q.Status.Hard, to), 1)
	}
	t.noteFormats(to)
	q.Status.Used = t.usage(q.Status.Hard)
	token := newToken()
	tr := quotav1alpha1.QuotaTransition{Namespace: ref.Namespace, Name: ref.Name, UID: ref.UID, Token: token,
		Op: quotav1alpha1.ReleaseOp, At: at}
	if to != nil {
		tr.Op, tr.GPUs, tr.ResourceName, tr.CPU, tr.Memory = quotav1alpha1.ChargeOp, to.GPUs, to.ResourceName, to.CPU, to.Memory
		tr.Borrowed, tr.Lent = slices.Clone(to.Borrowed), slices.Clone(to.Lent)
		if len(to.Selector) > 0 {
			tr.Selector = map[string]string{}
			for k, v := range to.Selector {
				tr.Selector[k] = v
			}
		}
	}
	q.Status.Inflight = putInflight(q.Status.Inflight, tr)
	q.Status.Charges, _ = Remove(q.Status.Charges, ref.UID)
	if len(q.Status.Charges) == 0 {
		q.Status.Charges = nil
	}
	return token, nil
}

// Drop removes a workspace's in-flight change when it still has this
// token; it reports whether it did. What the quota counts is unchanged:
// the workspace's record says the same.
func Drop(q *quotav1alpha1.TenantQuota, uid types.UID, token string) bool {
	for i, t := range q.Status.Inflight {
		if t.UID == uid && t.Token == token {
			q.Status.Inflight = append(q.Status.Inflight[:i:i], q.Status.Inflight[i+1:]...)
			if len(q.Status.Inflight) == 0 {
				q.Status.Inflight = nil
			}
			return true
		}
	}
	return false
}

// Forget removes the in-flight change and the earlier Apiary's charge of a
// workspace that is gone, taking what they counted out of the totals and
// counting its usage up to at.
func Forget(q *quotav1alpha1.TenantQuota, uid types.UID, at metav1.Time) bool {
	ref := Ref{UID: uid}
	c := Counted(q, ref, nil)
	changed := false
	if t := FindInflight(q, uid); t != nil {
		changed = Drop(q, uid, t.Token)
	}
	if old := Find(q.Status.Charges, uid); old != nil {
		q.Status.Charges, _ = Remove(q.Status.Charges, uid)
		if len(q.Status.Charges) == 0 {
			q.Status.Charges = nil
		}
		changed = true
	}
	if c != nil && changed {
		t := usedTotals(q)
		t.put(amountsOf(q.Status.Hard, c), -1)
		q.Status.Used = t.usage(q.Status.Hard)
		closeUsage(q, c, at)
	}
	return changed
}

// RecordFor is the record a workspace writes of its in-flight change in a quota.
func RecordFor(q *quotav1alpha1.TenantQuota, t quotav1alpha1.QuotaTransition) workspacesv1.WorkspaceQuotaCharge {
	r := workspacesv1.WorkspaceQuotaCharge{Quota: q.Name, QuotaUID: q.UID, Token: t.Token}
	if t.Op == quotav1alpha1.ReleaseOp {
		r.Released = true
		return r
	}
	r.GPUs, r.ResourceName, r.Selector, r.CPU, r.Memory = t.GPUs, t.ResourceName, t.Selector, t.CPU, t.Memory
	r.Borrowed, r.Lent = t.Borrowed, t.Lent
	since := t.At
	r.Since = &since
	return r
}

// PutRecord returns the records with r in place of the record of the same quota.
func PutRecord(records []workspacesv1.WorkspaceQuotaCharge, r workspacesv1.WorkspaceQuotaCharge) []workspacesv1.WorkspaceQuotaCharge {
	out := make([]workspacesv1.WorkspaceQuotaCharge, 0, len(records)+1)
	for _, o := range records {
		if o.Quota != r.Quota {
			out = append(out, o)
		}
	}
	out = append(out, r)
	sort.Slice(out, func(i, j int) bool { return out[i].Quota < out[j].Quota })
	return out
}

// EnsureTotals converts a quota last written by an earlier Apiary, whose
// used derives from its list of charges, to totals: used becomes the sum
// of the charges (workspaces, CPU and memory always), and the charges stay
// listed until each workspace moves its own onto its status (Move). A new
// quota starts at zero. It reports whether it changed anything.
func EnsureTotals(q *quotav1alpha1.TenantQuota) bool {
	if q.Status.Totals {
		return false
	}
	q.Status.Hard = *q.Spec.Hard.DeepCopy()
	q.Status.Used = totalsOf(q.Status.Hard, q.Status.Charges).usage(q.Status.Hard)
	q.Status.Totals = true
	return true
}

func putInflight(list []quotav1alpha1.QuotaTransition, t quotav1alpha1.QuotaTransition) []quotav1alpha1.QuotaTransition {
	out := make([]quotav1alpha1.QuotaTransition, 0, len(list)+1)
	for _, o := range list {
		if o.UID != t.UID {
			out = append(out, o)
		}
	}
	return append(out, t)
}

func transitionCharge(t quotav1alpha1.QuotaTransition) quotav1alpha1.QuotaCharge {
	return quotav1alpha1.QuotaCharge{Namespace: t.Namespace, Name: t.Name, UID: t.UID, GPUs: t.GPUs,
		ResourceName: t.ResourceName, Selector: t.Selector, CPU: t.CPU, Memory: t.Memory, Borrowed: t.Borrowed, Lent: t.Lent,
		ChargedAt: t.At}
}

func recordCharge(ref Ref, r workspacesv1.WorkspaceQuotaCharge) quotav1alpha1.QuotaCharge {
	c := quotav1alpha1.QuotaCharge{Namespace: ref.Namespace, Name: ref.Name, UID: ref.UID, GPUs: r.GPUs,
		ResourceName: r.ResourceName, Selector: r.Selector, CPU: r.CPU, Memory: r.Memory, Borrowed: r.Borrowed, Lent: r.Lent}
	if r.Since != nil {
		c.ChargedAt = *r.Since
	}
	return c
}

// RateOf is what a charge holds at any moment, for usage. A loan holds
// nothing of its lender's: the borrower's own quota counts the GPUs.
func RateOf(c quotav1alpha1.QuotaCharge) usage.Rate {
	if IsLoan(c) {
		return usage.Rate{}
	}
	return usage.RateOf(c.GPUs, c.ResourceName, c.Selector, c.CPU, c.Memory)
}

// closeUsage counts in the quota's usage what a charge held from its start
// to at, when it ends or changes: in the write that ends it, so once. A
// charge of unknown start (recorded before Apiary counted usage) counts
// nothing.
func closeUsage(q *quotav1alpha1.TenantQuota, c *quotav1alpha1.QuotaCharge, at metav1.Time) {
	if IsLoan(*c) {
		return
	}
	q.Status.Usage = usage.Record(q.Status.Usage, RateOf(*c), c.ChargedAt.Time, at.Time)
}

// newToken is 16 random hex digits.
func newToken() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
