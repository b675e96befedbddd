package quota

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/resources"
)

// wrapped is what the workspace controller's totals charged for
// perReplica.cpu "4000000000000000" × 3 replicas: 1.2e19 milli-cores,
// wrapped past int64 to -6.4e18.
func wrapped() *resource.Quantity {
	per := resource.MustParse("4000000000000000")
	replicas := int64(3)
	return resource.NewMilliQuantity(per.MilliValue()*replicas, per.Format)
}

// The hostile tenant of the issue: a workspace whose CPU total wrapped
// below zero is refused, and a ledger holding such a charge counts it as
// the most it could be, so the workspaces after it wait instead of running
// past hard.
func TestAChargeThatWrappedBelowZeroNeverLowersUsage(t *testing.T) {
	g := NewWithT(t)
	g.Expect(wrapped().Sign()).To(Equal(-1), "the overflow this test is about")
	hard := quotav1alpha1.QuotaLimits{CPU: ptr.To(resource.MustParse("16"))}
	ordinary := func(name, cpu string) quotav1alpha1.QuotaCharge {
		return Request{Namespace: "a", Name: name, UID: types.UID(name), CPU: ptr.To(resource.MustParse(cpu))}.Charge(metav1.Now())
	}
	q := tenantQuota(hard, ordinary("first", "2"))

	hostile := Request{Namespace: "a", Name: "hostile", UID: "hostile", CPU: wrapped()}.Charge(metav1.Now())
	g.Expect(Check(q, nil, hostile)).To(ConsistOf(HaveField("Limit", "cpu")), "the charge is refused")

	// A ledger written before the fix holds the charge as it wrapped.
	asWritten := quotav1alpha1.QuotaCharge{Namespace: "a", Name: "hostile", UID: "hostile", CPU: wrapped()}
	q.Status.Charges = Upsert(q.Status.Charges, asWritten)
	Refresh(q) // the first write converts the ledger to totals (EnsureTotals)
	g.Expect(q.Status.Used.CPU.Sign()).To(Equal(1), "usage is never negative")
	g.Expect(q.Status.Used.CPU.MilliValue()).To(Equal(int64(math.MaxInt64)), "it counts as the most it could be")
	g.Expect(q.Status.Conditions[0].Status).To(Equal(metav1.ConditionFalse), "the quota is over its cpu limit")
	g.Expect(Check(q, nil, ordinary("next", "1"))).To(ConsistOf(HaveField("Limit", "cpu")), "the next workspace waits")

	// The quota's controller charges the admission record it finds the same way.
	rec := &workspacesv1.WorkspaceAdmission{CPU: wrapped()}
	ws := &metav1.ObjectMeta{Namespace: "a", Name: "hostile", UID: "hostile"}
	c := AdmissionRequest(ws, rec).Charge(metav1.Now())
	g.Expect(c.CPU.MilliValue()).To(Equal(int64(math.MaxInt64)))
	g.Expect(Check(tenantQuota(hard), nil, c)).To(ConsistOf(HaveField("Limit", "cpu")))
}

// gpusPerReplica 2^62 × 4 replicas wraps to 0 in int64.
func TestAGPUProductPastInt64IsChargedInFull(t *testing.T) {
	g := NewWithT(t)
	hard := quotav1alpha1.QuotaLimits{GPUs: []quotav1alpha1.GPULimit{{Name: "all", ResourceName: nv, Count: 8}}}
	rec := &workspacesv1.WorkspaceAdmission{GPUsPerReplica: 1 << 62, Replicas: 4, ResourceName: nv}
	c := AdmissionRequest(&metav1.ObjectMeta{Namespace: "a", Name: "w", UID: "w"}, rec).Charge(metav1.Now())
	g.Expect(c.GPUs).To(Equal(int64(math.MaxInt64)))
	g.Expect(Check(tenantQuota(hard), nil, c)).To(ConsistOf(HaveField("Limit", `gpus "all"`)))

	// Two charges that each fit int64 but not together saturate the sum.
	big1 := charge("a", "x", math.MaxInt64-1, nil)
	big2 := charge("a", "y", math.MaxInt64-1, nil)
	u := Usage(hard, []quotav1alpha1.QuotaCharge{big1, big2})
	g.Expect(u.GPUs[0].Count).To(Equal(int64(math.MaxInt64)))
	q := tenantQuota(quotav1alpha1.QuotaLimits{GPUs: []quotav1alpha1.GPULimit{{Name: "all", ResourceName: nv, Count: math.MaxInt64}}}, big1)
	g.Expect(Check(q, nil, big2)).To(ConsistOf(HaveField("Limit", `gpus "all"`)), "a sum that saturates is refused by any limit")
}

// Extreme amounts a ledger may hold: valid ones, and corrupt ones (negative,
// past int64) that count as math.MaxInt64.
var (
	extremeGPUs = []int64{0, 1, 3, 8, math.MaxInt64, math.MaxInt64 - 1, 1 << 62, -1, math.MinInt64}
	extremeCPU  = []string{"", "500m", "16", "0.0001m", "9223372036854775807m", "9223372036854775808m", "1e30", "-1"}
	extremeMem  = []string{"", "1Gi", "64Ti", "9223372036854775807", "100000Ei", "1e19", "-1Gi"}
)

// exactCount is what a limit counts of an amount, exactly: a corrupt one as
// math.MaxInt64.
func exactCount(n int64) *big.Int {
	if n < 0 {
		return big.NewInt(math.MaxInt64)
	}
	return big.NewInt(n)
}

// TestUsageSumsOverManyCharges: over random ledgers of extreme charges, the
// usage of every limit is the exact total (corrupt amounts counting as
// math.MaxInt64) read back at most math.MaxInt64 — never negative, never
// less than what the charges hold; a quota is over a limit whenever the
// exact total is above it; and a tally that replaces charges one by one
// agrees with the total of the ledger it ends with.
func TestUsageSumsOverManyCharges(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	qty := func(pool []string) *resource.Quantity {
		if s := pool[r.IntN(len(pool))]; s != "" {
			return ptr.To(resource.MustParse(s))
		}
		return nil
	}
	for round := range 500 {
		hard := quotav1alpha1.QuotaLimits{
			GPUs: []quotav1alpha1.GPULimit{{Name: "all", ResourceName: nv, Count: extremeGPUs[r.IntN(5)]},
				{Name: "h100", ResourceName: nv, GPUModel: "H100", Count: r.Int64N(20)}},
			CPU:    ptr.To(resource.MustParse([]string{"16", "1e30", "9223372036854775807m"}[r.IntN(3)])),
			Memory: ptr.To(resource.MustParse([]string{"64Gi", "8Ei"}[r.IntN(2)])),
		}
		var ledger []quotav1alpha1.QuotaCharge
		q := tenantQuota(hard)
		tl := newTally(q)
		for range r.IntN(40) {
			name := string(rune('a' + r.IntN(12)))
			sel := []map[string]string{nil, h100}[r.IntN(2)]
			c := charge("ns", name, extremeGPUs[r.IntN(len(extremeGPUs))], sel)
			c.CPU, c.Memory = qty(extremeCPU), qty(extremeMem)
			ledger = Upsert(ledger, c)
			tl.put(c)
		}
		u := Usage(hard, ledger)
		exact := totalsOf(hard, ledger)
		g := NewWithT(t)
		inc := tl.used
		inc.cpuFormat, inc.memoryFormat = exact.cpuFormat, exact.memoryFormat // a tally shows nothing
		g.Expect(inc).To(Equal(exact), "round %d: a tally agrees with the total of its ledger", round)
		for i, l := range hard.GPUs {
			sum := new(big.Int)
			for _, c := range ledger {
				if GPUsCounted(l, c) != 0 {
					sum.Add(sum, exactCount(c.GPUs))
				}
			}
			want := sum
			if sum.Cmp(big.NewInt(math.MaxInt64)) > 0 {
				want = big.NewInt(math.MaxInt64)
			}
			g.Expect(u.GPUs[i].Count).To(Equal(want.Int64()), "round %d: gpus %q", round, l.Name)
			g.Expect(exact.gpus[i].Exceeds(l.Count)).To(Equal(sum.Cmp(big.NewInt(l.Count)) > 0 || sum.Cmp(big.NewInt(math.MaxInt64)) >= 0),
				"round %d: over gpus %q exactly when the exact sum is", round, l.Name)
		}
		for _, x := range []struct {
			what  string
			unit  resources.Unit
			got   *resource.Quantity
			of    func(quotav1alpha1.QuotaCharge) *resource.Quantity
			limit *resource.Quantity
			total resources.Sum
		}{
			{"cpu", resources.Milli, u.CPU, func(c quotav1alpha1.QuotaCharge) *resource.Quantity { return c.CPU }, hard.CPU, exact.cpu},
			{"memory", resources.Whole, u.Memory, func(c quotav1alpha1.QuotaCharge) *resource.Quantity { return c.Memory }, hard.Memory, exact.memory},
		} {
			sum := new(big.Int)
			for _, c := range ledger {
				if q := x.of(c); q != nil {
					n, err := x.unit.Ceil(*q)
					if err != nil {
						n = -1
					}
					sum.Add(sum, exactCount(n))
				}
			}
			got, err := x.unit.Ceil(*x.got)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(BeNumerically(">=", 0))
			if sum.Cmp(big.NewInt(math.MaxInt64)) >= 0 {
				g.Expect(got).To(Equal(int64(math.MaxInt64)), "round %d: %s saturates", round, x.what)
				g.Expect(x.unit.Exceeds(x.total, *x.limit)).To(BeTrue(), "round %d: a saturated %s is over its limit", round, x.what)
			} else {
				g.Expect(got).To(Equal(sum.Int64()), "round %d: %s", round, x.what)
			}
		}
	}
}
