package scaledown

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestParseReplicas(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1", 1, true}, {"3", 3, true}, {"10000", 10000, true},
		{"0", 1, false}, {"00", 1, false}, {"03", 1, false}, {"-1", 1, false}, {"+1", 1, false},
		{"10001", 1, false}, {"99999", 1, false}, {"1e3", 1, false}, {"", 1, false},
		{" 1", 1, false}, {"1 ", 1, false}, {"0x10", 1, false}, {"١", 1, false},
		{"9223372036854775808", 1, false},
	} {
		n, err := parseReplicas(tc.in)
		g := NewWithT(t)
		g.Expect(n).To(Equal(tc.want), "%q", tc.in)
		g.Expect(err == nil).To(Equal(tc.ok), "%q: %v", tc.in, err)
	}
}

func FuzzParseReplicas(f *testing.F) {
	for _, s := range []string{"1", "10000", "0", "-3", "abc", "10001", "007", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := parseReplicas(s)
		if n < 1 || n > MaxSavedReplicas {
			t.Fatalf("parseReplicas(%q) = %d, out of range", s, n)
		}
		if err == nil && formatReplicas(n) != s {
			t.Fatalf("parseReplicas(%q) = %d accepts a value Stop does not write", s, n)
		}
		if err != nil && len(err.Error()) > 200 {
			t.Fatalf("error for %q is %d bytes long", s, len(err.Error()))
		}
	})
}

func TestParseSuspend(t *testing.T) {
	g := NewWithT(t)
	for in, want := range map[string]bool{"true": true, "false": false} {
		s, err := parseSuspend(in)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(s).To(Equal(want))
	}
	for _, in := range []string{"", "True", "1", "yes"} {
		s, err := parseSuspend(in)
		g.Expect(err).To(HaveOccurred(), "%q", in)
		g.Expect(s).To(BeFalse())
	}
}

func TestDescendants(t *testing.T) {
	g := NewWithT(t)
	item := func(kind, uid string, owners ...string) metav1.PartialObjectMetadata {
		m := metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{Kind: kind}, ObjectMeta: metav1.ObjectMeta{Name: uid, UID: types.UID(uid)}}
		for _, o := range owners {
			m.OwnerReferences = append(m.OwnerReferences, metav1.OwnerReference{UID: types.UID(o)})
		}
		return m
	}
	// Listed children first, so the walk needs more than one pass:
	// LeaderWorkerSet → StatefulSet → leader Pod → worker StatefulSet → Pod.
	items := []metav1.PartialObjectMetadata{
		item("Pod", "worker-0", "workers"),
		item("StatefulSet", "workers", "leader-0"),
		item("Pod", "leader-0", "leaders"),
		item("StatefulSet", "leaders", "lws"),
		item("Pod", "stranger", "other"),
		item("Pod", "cycle-a", "cycle-b"),
		item("Pod", "cycle-b", "cycle-a"),
	}
	var names []string
	for _, m := range descendants(map[types.UID]bool{"lws": true}, items) {
		names = append(names, m.Name)
	}
	g.Expect(names).To(ConsistOf("worker-0", "workers", "leader-0", "leaders"))
	g.Expect(descendants(map[types.UID]bool{}, items)).To(BeEmpty())
}

// TestStartRestoresTheRecordNotThePlantedAnnotation: a tenant's chart
// plants the saved-replicas annotation on a running controller and on one
// that is off. Stop records the running one's live count, Start restores
// that, capped by the limit, and leaves the one that is off alone; without
// a record (stopped by an older Apiary) the annotation counts, capped too.
func TestStartRestoresTheRecordNotThePlantedAnnotation(t *testing.T) {
	g := NewWithT(t)
	ctx, ns := context.Background(), namespace(t)
	web := deployment(t, ns, "web", "a", 2)
	idle := deployment(t, ns, "idle", "a", 0)
	for _, d := range []*appsv1.Deployment{web, idle} {
		d.Annotations[ReplicasAnnotation] = "10000"
		g.Expect(child.Client.Update(ctx, d)).To(Succeed())
	}
	rec, err := Plan(ctx, child.Client, ns, "a", nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rec).To(Equal(Record{"Deployment/web": 2}))
	res, err := Stop(ctx, child.Client, ns, "a", rec)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Record).To(Equal(rec))
	expect(t, web, 0, ReplicasAnnotation, "2")
	res, err = Start(ctx, child.Client, ns, "a", rec, 1)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Restored).To(Equal(1))
	g.Expect(res.Warnings).To(ConsistOf(ContainSubstring("above the 1 admitted")))
	expect(t, web, 1, ReplicasAnnotation, "")
	expect(t, idle, 0, ReplicasAnnotation, "10000")

	res, err = Start(ctx, child.Client, ns, "a", nil, 3)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Restored).To(Equal(1))
	expect(t, idle, 3, ReplicasAnnotation, "")
}
