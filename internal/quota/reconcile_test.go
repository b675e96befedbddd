package quota

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// TestRecountCountsRecordsChangesInFlightAndOldCharges: a recount after
// the GPU limits changed counts each workspace once: its change in flight
// over its record, an earlier Apiary's charge, and a record of another
// quota of the same name (deleted and created again) not at all.
func TestRecountCountsRecordsChangesInFlightAndOldCharges(t *testing.T) {
	g := NewWithT(t)
	hard := quotav1alpha1.QuotaLimits{GPUs: []quotav1alpha1.GPULimit{{Name: "all", ResourceName: nv, Count: 100}}}
	q := tenantQuota(hard, charge("t", "old", 3, h100))
	q.UID = "q1"
	EnsureTotals(q)
	rec := func(c quotav1alpha1.QuotaCharge, uid string) []workspacesv1.WorkspaceQuotaCharge {
		return []workspacesv1.WorkspaceQuotaCharge{{Quota: q.Name, QuotaUID: "q1", Token: "t0", GPUs: c.GPUs,
			ResourceName: c.ResourceName, Selector: c.Selector}}
	}
	a, b, other := charge("t", "a", 2, h100), charge("t", "b", 1, nil), charge("t", "other", 5, nil)
	_, err := Move(q, Ref{Namespace: "t", Name: "a", UID: a.UID}, nil, &a, metav1.Now())
	g.Expect(err).NotTo(HaveOccurred())
	bigger := b
	bigger.GPUs = 4
	_, err = Move(q, Ref{Namespace: "t", Name: "b", UID: b.UID}, &b, &bigger, metav1.Now())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(q.Status.Used.GPUs[0].Count).To(Equal(int64(3 + 2 + 4 - 1)))

	q.Spec.Hard.GPUs = append(q.Spec.Hard.GPUs, quotav1alpha1.GPULimit{Name: "h100", ResourceName: nv, GPUModel: "H100", Count: 8})
	g.Expect(Recounting(q)).To(BeTrue())
	g.Expect(Check(q, nil, charge("t", "new", 1, nil))).To(ConsistOf(HaveField("Recounting", true)), "nothing grows while recounting")
	g.Expect(Check(q, &a, a)).To(BeEmpty(), "what does not grow passes")
	otherRecords := rec(other, "")
	otherRecords[0].QuotaUID = "q0"
	Recount(q, []Member{
		{Ref: Ref{Namespace: "t", Name: "a", UID: a.UID}},
		{Ref: Ref{Namespace: "t", Name: "b", UID: b.UID}, Records: rec(b, "")},
		{Ref: Ref{Namespace: "t", Name: "other", UID: other.UID}, Records: otherRecords},
	})
	g.Expect(Recounting(q)).To(BeFalse())
	g.Expect(q.Status.Used.GPUs).To(Equal([]quotav1alpha1.GPUUsage{{Name: "all", Count: 9}, {Name: "h100", Count: 5}}))
	g.Expect(q.Status.Used.Workspaces).To(Equal(int64(3)))
}

// TestUnsettled lists the changes in flight older than a time, and an
// earlier Apiary's charges.
func TestUnsettled(t *testing.T) {
	g := NewWithT(t)
	now := time.Now()
	q := tenantQuota(quotav1alpha1.QuotaLimits{}, charge("t", "old", 1, nil))
	q.Status.Charges[0].ChargedAt = metav1.NewTime(now.Add(-time.Hour))
	EnsureTotals(q)
	c := charge("t", "young", 1, nil)
	_, err := Move(q, Ref{Namespace: "t", Name: "young", UID: c.UID}, nil, &c, metav1.NewTime(now))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(Unsettled(q, now.Add(-time.Minute))).To(ConsistOf(HaveField("Name", "old")))
	g.Expect(Unsettled(q, now.Add(time.Minute))).To(HaveLen(2))
}

func TestRoomGrew(t *testing.T) {
	g := NewWithT(t)
	before := tenantQuota(quotav1alpha1.QuotaLimits{GPUs: []quotav1alpha1.GPULimit{{Name: "all", ResourceName: nv, Count: 10}}},
		charge("t", "a", 2, nil), charge("t", "b", 2, nil))
	EnsureTotals(before)
	after := before.DeepCopy()
	c := charge("t", "c", 1, nil)
	_, _ = Move(after, Ref{Namespace: "t", Name: "c", UID: c.UID}, nil, &c, metav1.Now())
	g.Expect(RoomGrew(before, after)).To(BeFalse(), "a new charge takes room")
	after = before.DeepCopy()
	a, smaller := before.Status.Charges[0], before.Status.Charges[0]
	smaller.GPUs = 1
	_, _ = Move(after, Ref{Namespace: "t", Name: "a", UID: a.UID}, &a, &smaller, metav1.Now())
	g.Expect(RoomGrew(before, after)).To(BeTrue(), "a charge shrank")
	after = before.DeepCopy()
	g.Expect(Forget(after, a.UID, metav1.Now())).To(BeTrue())
	g.Expect(RoomGrew(before, after)).To(BeTrue(), "a charge went")
	after = before.DeepCopy()
	after.Generation++
	g.Expect(RoomGrew(before, after)).To(BeTrue(), "the limits changed")
}
