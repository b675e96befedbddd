package usage

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
)

func qty(s string) *resource.Quantity { q := resource.MustParse(s); return &q }

func TestRateOver(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	r := RateOf(2, "nvidia.com/gpu", map[string]string{"exalsius.ai/gpu-model": "h100"}, qty("1500m"), qty("2Gi"))
	u := r.Over(t0, t0.Add(time.Hour+900*time.Millisecond))
	g.Expect(u.GPUs).To(Equal([]commonv1.GPUSeconds{{ResourceName: "nvidia.com/gpu", Model: "h100", Seconds: 7200}}))
	g.Expect(u.CPU.Cmp(resource.MustParse("5400"))).To(Equal(0), u.CPU.String())
	g.Expect(u.Memory.Cmp(*resource.NewQuantity(2<<30*3600, resource.DecimalSI))).To(Equal(0), u.Memory.String())

	// Nothing for an empty, reversed or unstarted interval, or a zero rate.
	g.Expect(r.Over(t0, t0)).To(Equal(commonv1.ResourceUsage{}))
	g.Expect(r.Over(t0, t0.Add(-time.Hour))).To(Equal(commonv1.ResourceUsage{}))
	g.Expect(r.Over(time.Time{}, t0)).To(Equal(commonv1.ResourceUsage{}))
	g.Expect(RateOf(0, "nvidia.com/gpu", nil, nil, nil).Over(t0, t0.Add(time.Hour))).To(Equal(commonv1.ResourceUsage{}))
	// Negative amounts (a corrupt record) count nothing.
	g.Expect(RateOf(-3, "nvidia.com/gpu", nil, qty("-1"), qty("-1")).IsZero()).To(BeTrue())

	// What the status schema could not hold is counted under the resource,
	// or under OtherResource, never refused.
	long := RateOf(1, "nvidia.com/gpu", map[string]string{"exalsius.ai/gpu-model": strings.Repeat("m", 64)}, nil, nil).Over(t0, t0.Add(time.Second))
	g.Expect(long.GPUs).To(Equal([]commonv1.GPUSeconds{{ResourceName: "nvidia.com/gpu", Seconds: 1}}))
	odd := RateOf(1, strings.Repeat("r", 254), nil, nil, nil).Over(t0, t0.Add(time.Second))
	g.Expect(odd.GPUs).To(Equal([]commonv1.GPUSeconds{{ResourceName: OtherResource, Seconds: 1}}))
	g.Expect(RateOf(1, "nvidia.com/gpu", map[string]string{"exalsius.ai/gpu-model": strings.Repeat("m", 63)}, nil, nil).Model).To(HaveLen(63))

	// Memory byte-seconds past int64 stay exact.
	big := RateOf(0, "", nil, nil, qty("64Ti")).Over(t0, t0.AddDate(1, 0, 0))
	want := resource.MustParse("2219148716386811904000") // 64 Ti × 365 days
	g.Expect(big.Memory.Cmp(want)).To(Equal(0), big.Memory.String())
}

func TestGPUEntriesAreBounded(t *testing.T) {
	g := NewWithT(t)
	var u commonv1.ResourceUsage
	var want int64
	for i := range 200 {
		res := "nvidia.com/gpu"
		if i%3 == 0 {
			res = "vendor" + string(rune('a'+i%40)) + ".com/gpu"
		}
		Add(&u, commonv1.ResourceUsage{GPUs: []commonv1.GPUSeconds{{ResourceName: res, Model: "m" + string(rune('a'+i%50)), Seconds: int64(i + 1)}}})
		want += int64(i + 1)
	}
	g.Expect(len(u.GPUs)).To(BeNumerically("<=", MaxGPUEntries))
	var got int64
	for _, e := range u.GPUs {
		got += e.Seconds
	}
	g.Expect(got).To(Equal(want), "folding keeps every second")
}

// TestRecordInPiecesIsRecordWhole is the property accounting rests on: a
// charge counted in any number of abutting pieces (a stop, a resize, a
// restart that counts again from the recorded start) counts what counting
// it whole counts, in the total and in every day, and the days add up to
// the total while none was dropped.
func TestRecordInPiecesIsRecordWhole(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 34))
	for i := range 2000 {
		g := NewWithT(t)
		start := time.Date(2026, 11, 1+rng.IntN(20), rng.IntN(24), rng.IntN(60), rng.IntN(60), rng.IntN(1e9), time.UTC)
		end := start.Add(time.Duration(rng.Int64N(int64(40 * 24 * time.Hour))))
		r := RateOf(rng.Int64N(9), "nvidia.com/gpu", map[string]string{"exalsius.ai/gpu-model": []string{"", "a100", "h100"}[rng.IntN(3)]},
			qty([]string{"0", "250m", "3", "96"}[rng.IntN(4)]), qty([]string{"0", "1Gi", "1536Mi", "2T"}[rng.IntN(4)]))
		whole := Record(nil, r, start, end)

		var pieces *quotav1alpha1.TenantUsage
		from := start.Truncate(time.Second)
		for from.Before(end.Truncate(time.Second)) {
			to := from.Add(time.Duration(rng.Int64N(int64(3*24*time.Hour))) + time.Second).Truncate(time.Second)
			if to.After(end) {
				to = end
			}
			pieces = Record(pieces, r, from, to)
			from = to.Truncate(time.Second)
		}
		if whole == nil {
			g.Expect(pieces).To(BeNil())
			continue
		}
		g.Expect(sameUsage(pieces.Total, whole.Total)).To(BeTrue(), "case %d: total %+v vs %+v", i, pieces.Total, whole.Total)
		g.Expect(pieces.Days).To(HaveLen(len(whole.Days)))
		var days commonv1.ResourceUsage
		for j := range whole.Days {
			g.Expect(pieces.Days[j].Date).To(Equal(whole.Days[j].Date))
			g.Expect(sameUsage(pieces.Days[j].ResourceUsage, whole.Days[j].ResourceUsage)).To(BeTrue(), "case %d day %s", i, whole.Days[j].Date)
			Add(&days, whole.Days[j].ResourceUsage)
		}
		g.Expect(sameUsage(days, whole.Total)).To(BeTrue(), "case %d: the days add up to the total", i)
		g.Expect(pieces.Since.Time).To(Equal(start.Truncate(time.Second)))

		// What a reader sees mid-way (counted + held) is the whole up to then.
		cut := start.Add(time.Duration(rng.Int64N(int64(end.Sub(start)) + 1))).Truncate(time.Second)
		counted := Record(nil, r, start, cut)
		now := Now(counted, []Held{{Rate: r, Since: cut}}, end)
		g.Expect(sameUsage(now, whole.Total)).To(BeTrue(), "case %d: counted and held", i)
		// And a window of every day reads the same.
		w, complete := Window(counted, []Held{{Rate: r, Since: cut}}, start.Truncate(24*time.Hour), end.Add(24*time.Hour), end)
		g.Expect(complete).To(BeTrue())
		g.Expect(sameUsage(w, whole.Total)).To(BeTrue(), "case %d: window", i)
	}
}

func TestDaysAreBoundedAndTheWindowSaysWhenIncomplete(t *testing.T) {
	g := NewWithT(t)
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	r := RateOf(1, "nvidia.com/gpu", nil, nil, nil)
	tu := Record(nil, r, start, start.AddDate(0, 0, 200))
	g.Expect(tu.Days).To(HaveLen(quotav1alpha1.MaxUsageDays))
	g.Expect(tu.Total.GPUs[0].Seconds).To(Equal(int64(200 * 24 * 3600)))
	last := start.AddDate(0, 0, 200).Truncate(24 * time.Hour)
	_, complete := Window(tu, nil, last.AddDate(0, 0, -10), last, last)
	g.Expect(complete).To(BeTrue())
	u, complete := Window(tu, nil, start.Truncate(24*time.Hour), last, last)
	g.Expect(complete).To(BeFalse())
	g.Expect(u.GPUs[0].Seconds).To(Equal(int64(91*24*3600)), "the 91 whole days kept before the last")
}

func sameUsage(a, b commonv1.ResourceUsage) bool {
	if len(a.GPUs) != len(b.GPUs) {
		return false
	}
	for i := range a.GPUs {
		if a.GPUs[i] != b.GPUs[i] {
			return false
		}
	}
	return sameQty(a.CPU, b.CPU) && sameQty(a.Memory, b.Memory)
}

func sameQty(a, b *resource.Quantity) bool {
	if a == nil || b == nil {
		return (a == nil || a.IsZero()) && (b == nil || b.IsZero())
	}
	return a.Cmp(*b) == 0
}
