package quota

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
)

const nv = "nvidia.com/gpu"

func charge(ns, name string, gpus int64, sel map[string]string) quotav1alpha1.QuotaCharge {
	return Request{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name), GPUs: gpus, ResourceName: nv, Selector: sel}.Charge(metav1.Now())
}

func tenantQuota(hard quotav1alpha1.QuotaLimits, charges ...quotav1alpha1.QuotaCharge) *quotav1alpha1.TenantQuota {
	return &quotav1alpha1.TenantQuota{ObjectMeta: metav1.ObjectMeta{Name: "team-a"},
		Spec:   quotav1alpha1.TenantQuotaSpec{Hard: hard},
		Status: quotav1alpha1.TenantQuotaStatus{Charges: charges}}
}

var h100 = map[string]string{"exalsius.ai/gpu-model": "H100"}

func TestGPUsCounted(t *testing.T) {
	cases := []struct {
		name  string
		limit quotav1alpha1.GPULimit
		c     quotav1alpha1.QuotaCharge
		want  int64
	}{
		{"any GPU of the resource", quotav1alpha1.GPULimit{Name: "all"}, charge("a", "w", 3, nil), 3},
		{"another resource", quotav1alpha1.GPULimit{Name: "amd", ResourceName: "amd.com/gpu"}, charge("a", "w", 3, nil), 0},
		{"the model pinned", quotav1alpha1.GPULimit{Name: "h", GPUModel: "H100"}, charge("a", "w", 2, h100), 2},
		{"another model", quotav1alpha1.GPULimit{Name: "a", GPUModel: "A100"}, charge("a", "w", 2, h100), 0},
		{"no model pinned", quotav1alpha1.GPULimit{Name: "h", GPUModel: "H100"}, charge("a", "w", 2, nil), 0},
		{"node labels carried", quotav1alpha1.GPULimit{Name: "p", NodeSelector: map[string]string{"pool": "x"}},
			charge("a", "w", 1, map[string]string{"pool": "x", "zone": "1"}), 1},
		{"node labels missing", quotav1alpha1.GPULimit{Name: "p", NodeSelector: map[string]string{"pool": "x"}},
			charge("a", "w", 1, map[string]string{"zone": "1"}), 0},
		{"no GPUs", quotav1alpha1.GPULimit{Name: "all"}, charge("a", "w", 0, nil), 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(GPUsCounted(tc.limit, tc.c)).To(Equal(tc.want))
		})
	}
}

func TestCheck(t *testing.T) {
	limits := quotav1alpha1.QuotaLimits{
		Workspaces: ptr.To[int64](3),
		GPUs:       []quotav1alpha1.GPULimit{{Name: "all", ResourceName: nv, Count: 8}, {Name: "h100", ResourceName: nv, GPUModel: "H100", Count: 4}},
		CPU:        ptr.To(resource.MustParse("10")),
	}
	withCPU := func(c quotav1alpha1.QuotaCharge, cpu string) quotav1alpha1.QuotaCharge {
		c.CPU = ptr.To(resource.MustParse(cpu))
		return c
	}
	cases := []struct {
		name    string
		ledger  []quotav1alpha1.QuotaCharge
		c       quotav1alpha1.QuotaCharge
		hard    *quotav1alpha1.QuotaLimits
		exceeds []string
	}{
		{name: "room for it", ledger: []quotav1alpha1.QuotaCharge{charge("a", "x", 2, nil)}, c: charge("b", "y", 2, h100)},
		{name: "the GPU limit is full", ledger: []quotav1alpha1.QuotaCharge{charge("a", "x", 7, nil)}, c: charge("b", "y", 2, nil),
			exceeds: []string{`gpus "all": 2 requested, 7 of 8 used`}},
		{name: "the model limit is full, the resource limit not", ledger: []quotav1alpha1.QuotaCharge{charge("a", "x", 3, h100)},
			c: charge("b", "y", 2, h100), exceeds: []string{`gpus "h100": 2 requested, 3 of 4 used`}},
		{name: "another model passes a full model limit", ledger: []quotav1alpha1.QuotaCharge{charge("a", "x", 4, h100)},
			c: charge("b", "y", 2, map[string]string{"exalsius.ai/gpu-model": "A100"})},
		{name: "workspaces are counted", ledger: []quotav1alpha1.QuotaCharge{charge("a", "x", 0, nil), charge("a", "y", 0, nil), charge("a", "z", 0, nil)},
			c: charge("b", "w", 0, nil), exceeds: []string{"workspaces: 1 requested, 3 of 3 used"}},
		{name: "a workspace's earlier charge is replaced, not added to", ledger: []quotav1alpha1.QuotaCharge{charge("a", "x", 6, nil)},
			c: charge("a", "x", 8, nil)},
		{name: "a workspace that shrinks fits a quota lowered below what is used",
			ledger: []quotav1alpha1.QuotaCharge{charge("a", "x", 6, nil), charge("a", "y", 4, nil)}, c: charge("a", "x", 5, nil)},
		{name: "a workspace already counted is not counted again", ledger: []quotav1alpha1.QuotaCharge{charge("a", "x", 0, nil), charge("a", "y", 0, nil), charge("a", "z", 0, nil)},
			c: charge("a", "z", 1, nil)},
		{name: "cpu", ledger: []quotav1alpha1.QuotaCharge{withCPU(charge("a", "x", 0, nil), "8")}, c: withCPU(charge("a", "y", 0, nil), "2500m"),
			exceeds: []string{"cpu: 2500m requested, 8 of 10 used"}},
		{name: "a charge that asks nothing of an exceeded limit fits (the quota was lowered)",
			ledger: []quotav1alpha1.QuotaCharge{charge("a", "x", 6, h100)}, c: charge("b", "y", 1, nil),
			hard: &quotav1alpha1.QuotaLimits{GPUs: []quotav1alpha1.GPULimit{{Name: "all", Count: 8}, {Name: "h100", GPUModel: "H100", Count: 2}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			hard := limits
			if tc.hard != nil {
				hard = *tc.hard
			}
			var got []string
			for _, e := range Check(tenantQuota(hard, tc.ledger...), Find(tc.ledger, tc.c.UID), tc.c) {
				got = append(got, e.String())
			}
			g.Expect(got).To(Equal(tc.exceeds))
		})
	}
}

func TestSelects(t *testing.T) {
	g := NewWithT(t)
	q := tenantQuota(quotav1alpha1.QuotaLimits{})
	q.Spec.NamespaceSelector = metav1.LabelSelector{MatchLabels: map[string]string{"tenant": "a"}}
	ok, err := Selects(q, map[string]string{"tenant": "a", "x": "y"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeTrue())
	ok, _ = Selects(q, map[string]string{"tenant": "b"})
	g.Expect(ok).To(BeFalse())
	q.Spec.NamespaceSelector = metav1.LabelSelector{}
	ok, _ = Selects(q, nil)
	g.Expect(ok).To(BeTrue(), "an empty selector selects every namespace")
	q.Spec.NamespaceSelector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tenant", Operator: "Near"}}}
	_, err = Selects(q, nil)
	g.Expect(err).To(MatchError(ContainSubstring(`namespaceSelector of TenantQuota "team-a"`)))
}

func TestLedgerEditsKeepOneChargePerWorkspaceInOrder(t *testing.T) {
	g := NewWithT(t)
	var ledger []quotav1alpha1.QuotaCharge
	ledger = Upsert(ledger, charge("b", "y", 1, nil))
	ledger = Upsert(ledger, charge("a", "z", 1, nil))
	ledger = Upsert(ledger, charge("a", "x", 1, nil))
	ledger = Upsert(ledger, charge("a", "z", 5, nil))
	g.Expect(ledger).To(HaveLen(3))
	g.Expect([]string{ledger[0].Name, ledger[1].Name, ledger[2].Name}).To(Equal([]string{"x", "z", "y"}))
	g.Expect(Find(ledger, "uid-a-z").GPUs).To(Equal(int64(5)))
	ledger, found := Remove(ledger, "uid-a-x")
	g.Expect(found).To(BeTrue())
	_, found = Remove(ledger, "uid-a-x")
	g.Expect(found).To(BeFalse())
	g.Expect(Find(ledger, "uid-a-x")).To(BeNil())
}

func TestRefresh(t *testing.T) {
	g := NewWithT(t)
	q := tenantQuota(quotav1alpha1.QuotaLimits{Workspaces: ptr.To[int64](5),
		GPUs:   []quotav1alpha1.GPULimit{{Name: "all", ResourceName: nv, Count: 4}},
		Memory: ptr.To(resource.MustParse("64Gi"))},
		charge("ns-b", "x", 3, nil), charge("ns-a", "y", 2, h100), charge("ns-a", "z", 0, nil))
	q.Status.Charges[0].Memory = ptr.To(resource.MustParse("16Gi"))
	Refresh(q)
	g.Expect(equality.Semantic.DeepEqual(q.Status.Hard, q.Spec.Hard)).To(BeTrue(), "status.hard is what is enforced")
	g.Expect(q.Status.Used.Workspaces).To(Equal(int64(3)))
	g.Expect(q.Status.Used.GPUs).To(Equal([]quotav1alpha1.GPUUsage{{Name: "all", Count: 5}}))
	g.Expect(q.Status.Used.Memory.String()).To(Equal("16Gi"))
	g.Expect(q.Status.Summary).To(Equal("gpus/all: 5/4, workspaces: 3/5, memory: 16Gi/64Gi"))
	c := q.Status.Conditions[0]
	g.Expect(c.Type).To(Equal(quotav1alpha1.WithinLimitsCondition))
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(c.Message).To(ContainSubstring(`gpus "all"`))

	g.Expect(q.Status.Totals).To(BeTrue(), "the ledger became totals")
	g.Expect(Forget(q, q.Status.Charges[0].UID, metav1.Now())).To(BeTrue())
	Refresh(q)
	g.Expect(q.Status.Conditions[0].Status).To(Equal(metav1.ConditionTrue))
	g.Expect(q.Status.Summary).To(Equal("gpus/all: 2/4, workspaces: 2/5, memory: 0/64Gi"))
}

func TestSameChargeIgnoresTheTimeAndEqualQuantities(t *testing.T) {
	g := NewWithT(t)
	a := charge("a", "x", 2, h100)
	b := a.DeepCopy()
	b.ChargedAt = metav1.NewTime(a.ChargedAt.Add(3600e9))
	b.CPU = ptr.To(resource.MustParse("0"))
	g.Expect(SameAmounts(a, *b)).To(BeTrue())
	b.Selector = map[string]string{"exalsius.ai/gpu-model": "A100"}
	g.Expect(SameAmounts(a, *b)).To(BeFalse())
}

func TestAheadServesOlderChargesFirst(t *testing.T) {
	g := NewWithT(t)
	q := tenantQuota(quotav1alpha1.QuotaLimits{Workspaces: ptr.To[int64](10),
		GPUs: []quotav1alpha1.GPULimit{{Name: "h100", ResourceName: nv, GPUModel: "H100", Count: 4}, {Name: "all", ResourceName: nv, Count: 16}}},
		charge("a", "running", 3, h100))
	big := charge("a", "big", 2, h100) // does not fit: h100 has 1 left
	g.Expect(Ahead(q, nil, []quotav1alpha1.QuotaCharge{big}, charge("b", "small", 1, h100))).To(Equal([]int{0}), "needs h100 too")
	g.Expect(Ahead(q, nil, []quotav1alpha1.QuotaCharge{big}, charge("b", "other", 1, nil))).To(BeEmpty(), "needs only \"all\"")

	one := charge("a", "one", 1, h100) // fits, and takes the last h100
	g.Expect(Ahead(q, nil, []quotav1alpha1.QuotaCharge{one}, charge("b", "x", 1, h100))).To(Equal([]int{0}), "the room is the older one's")
	g.Expect(Ahead(q, nil, []quotav1alpha1.QuotaCharge{one}, charge("b", "y", 1, nil))).To(BeEmpty(), "room for both")
	g.Expect(Ahead(q, nil, []quotav1alpha1.QuotaCharge{one, big}, charge("b", "z", 1, map[string]string{"pool": "p"}))).To(BeEmpty())
}
