package quota

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
)

func chargedAt(c quotav1alpha1.QuotaCharge, at time.Time) quotav1alpha1.QuotaCharge {
	c.ChargedAt = metav1.NewTime(at)
	return c
}

func member(c quotav1alpha1.QuotaCharge, admitted bool) Member {
	m := Member{Namespace: c.Namespace, Name: c.Name, UID: c.UID}
	if admitted {
		m.Admitted = &c
	}
	return m
}

func TestReconcileLedger(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	old, young := now.Add(-time.Hour), now.Add(-10*time.Second)
	selected := func(ns string) bool { return ns != "left" }
	a := chargedAt(charge("t", "a", 2, nil), old)
	grown := chargedAt(charge("t", "a", 4, nil), young)
	cases := []struct {
		name    string
		ledger  []quotav1alpha1.QuotaCharge
		members []Member
		remove  []string
		put     []int64 // GPUs of the charges put
		unknown int
		requeue time.Duration
	}{
		{name: "in step", ledger: []quotav1alpha1.QuotaCharge{a}, members: []Member{member(a, true)}},
		{name: "a namespace that left the tenant", ledger: []quotav1alpha1.QuotaCharge{chargedAt(charge("left", "x", 1, nil), old)},
			remove: []string{"x"}},
		{name: "a workspace the cache does not hold", ledger: []quotav1alpha1.QuotaCharge{a}, unknown: 1},
		{name: "an admitted workspace without charge", members: []Member{member(a, true)}, put: []int64{2}},
		{name: "a workspace without admission is not charged", members: []Member{member(a, false)}},
		{name: "a new charge whose status is not written yet is left alone", ledger: []quotav1alpha1.QuotaCharge{grown},
			members: []Member{member(a, true)}, requeue: 2*time.Minute - 10*time.Second},
		{name: "a stale charge takes the admission's", ledger: []quotav1alpha1.QuotaCharge{chargedAt(grown, old)},
			members: []Member{member(a, true)}, put: []int64{2}},
		{name: "a stale charge without admission goes", ledger: []quotav1alpha1.QuotaCharge{chargedAt(grown, old)},
			members: []Member{member(a, false)}, remove: []string{"a"}},
		{name: "a stopped workspace holds its place", ledger: []quotav1alpha1.QuotaCharge{Held(a)},
			members: []Member{func() Member { m := member(a, false); m.Stopped = true; return m }()}},
		{name: "a stopped workspace without a charge gets its place", put: []int64{0},
			members: []Member{func() Member { m := member(a, false); m.Stopped = true; return m }()}},
		{name: "a stopped workspace's stale charge keeps its place only", ledger: []quotav1alpha1.QuotaCharge{chargedAt(grown, old)},
			members: []Member{func() Member { m := member(a, false); m.Stopped = true; return m }()}, put: []int64{0}},
		{name: "a deleting workspace releases its own", ledger: []quotav1alpha1.QuotaCharge{chargedAt(grown, old)},
			members: []Member{func() Member { m := member(a, true); m.Deleting = true; return m }()}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			e := Reconcile(tc.ledger, selected, tc.members, now, 2*time.Minute)
			var removed []string
			for _, c := range e.Remove {
				removed = append(removed, c.Name)
			}
			var put []int64
			for _, c := range e.Put {
				put = append(put, c.GPUs)
			}
			g.Expect(removed).To(Equal(tc.remove))
			g.Expect(put).To(Equal(tc.put))
			g.Expect(e.Unknown).To(HaveLen(tc.unknown))
			g.Expect(e.RequeueAfter).To(Equal(tc.requeue))
		})
	}
}

func TestApplyLeavesChargesRewrittenMeanwhile(t *testing.T) {
	g := NewWithT(t)
	now := time.Now()
	seenA := chargedAt(charge("t", "a", 2, nil), now.Add(-time.Hour))
	seenB := chargedAt(charge("t", "b", 1, nil), now.Add(-time.Hour))
	e := Edits{Remove: []quotav1alpha1.QuotaCharge{seenA}, Put: []quotav1alpha1.QuotaCharge{charge("t", "b", 3, nil), charge("t", "c", 1, nil)}}

	// Meanwhile a re-charged itself and b was re-charged too.
	q := tenantQuota(quotav1alpha1.QuotaLimits{}, chargedAt(charge("t", "a", 5, nil), now), chargedAt(charge("t", "b", 4, nil), now))
	g.Expect(e.Apply(q, []quotav1alpha1.QuotaCharge{seenA, seenB})).To(BeTrue(), "c is still missing")
	g.Expect(Find(q.Status.Charges, "uid-t-a").GPUs).To(Equal(int64(5)))
	g.Expect(Find(q.Status.Charges, "uid-t-b").GPUs).To(Equal(int64(4)))
	g.Expect(Find(q.Status.Charges, "uid-t-c")).NotTo(BeNil())

	// Unchanged since: the edits apply.
	q = tenantQuota(quotav1alpha1.QuotaLimits{}, seenA, seenB)
	g.Expect(e.Apply(q, []quotav1alpha1.QuotaCharge{seenA, seenB})).To(BeTrue())
	g.Expect(Find(q.Status.Charges, "uid-t-a")).To(BeNil())
	g.Expect(Find(q.Status.Charges, "uid-t-b").GPUs).To(Equal(int64(3)))
}

func TestRoomGrew(t *testing.T) {
	g := NewWithT(t)
	before := tenantQuota(quotav1alpha1.QuotaLimits{}, charge("t", "a", 2, nil), charge("t", "b", 2, nil))
	after := before.DeepCopy()
	after.Status.Charges = append(after.Status.Charges, charge("t", "c", 1, nil))
	g.Expect(RoomGrew(before, after)).To(BeFalse(), "a new charge takes room")
	after.Status.Charges[0].GPUs = 1
	g.Expect(RoomGrew(before, after)).To(BeTrue(), "a charge shrank")
	after = before.DeepCopy()
	after.Status.Charges = after.Status.Charges[1:]
	g.Expect(RoomGrew(before, after)).To(BeTrue(), "a charge went")
	after = before.DeepCopy()
	after.Generation++
	g.Expect(RoomGrew(before, after)).To(BeTrue(), "the limits changed")
}
