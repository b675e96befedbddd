package quota

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
)

func cpuCharge(name string, gpus int64, cpu string) quotav1alpha1.QuotaCharge {
	c := charge("team", name, gpus, nil)
	c.CPU = ptr.To(resource.MustParse(cpu))
	return c
}

func TestPreemptFor(t *testing.T) {
	limits := quotav1alpha1.QuotaLimits{Workspaces: ptr.To[int64](10), CPU: ptr.To(resource.MustParse("8")),
		GPUs: []quotav1alpha1.GPULimit{{Name: "all", ResourceName: nv, Count: 4}}}
	a, b, big := cpuCharge("a", 1, "2"), cpuCharge("b", 1, "2"), cpuCharge("big", 2, "4")
	cases := []struct {
		name             string
		hard             quotav1alpha1.QuotaLimits
		counted          []quotav1alpha1.QuotaCharge
		leaving, victims []quotav1alpha1.QuotaCharge
		c                quotav1alpha1.QuotaCharge
		want             QuotaPreemption
	}{
		{name: "fits already", hard: limits, counted: []quotav1alpha1.QuotaCharge{a}, victims: []quotav1alpha1.QuotaCharge{a},
			c: cpuCharge("new", 1, "2")},
		{name: "the fewest", hard: limits, counted: []quotav1alpha1.QuotaCharge{a, b, big}, victims: []quotav1alpha1.QuotaCharge{a, b, big},
			c: cpuCharge("new", 2, "4"), want: QuotaPreemption{Victims: []int{2}}},
		{name: "the first of equals", hard: limits, counted: []quotav1alpha1.QuotaCharge{a, b, big}, victims: []quotav1alpha1.QuotaCharge{a, b},
			c: cpuCharge("new", 1, "2"), want: QuotaPreemption{Victims: []int{0}}},
		{name: "not enough to take", hard: limits, counted: []quotav1alpha1.QuotaCharge{a, b, big}, victims: []quotav1alpha1.QuotaCharge{a},
			c: cpuCharge("new", 2, "4")},
		{name: "the room being freed is waited for", hard: limits, counted: []quotav1alpha1.QuotaCharge{a, b, big},
			leaving: []quotav1alpha1.QuotaCharge{big}, victims: []quotav1alpha1.QuotaCharge{a, b},
			c: cpuCharge("new", 2, "4"), want: QuotaPreemption{Freeing: true}},
		{name: "a stop never frees a place in the workspaces count",
			hard:    quotav1alpha1.QuotaLimits{Workspaces: ptr.To[int64](3), CPU: ptr.To(resource.MustParse("100"))},
			counted: []quotav1alpha1.QuotaCharge{a, b, big}, victims: []quotav1alpha1.QuotaCharge{a, b, big}, c: cpuCharge("new", 0, "1")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := tenantQuota(tc.hard, tc.counted...)
			EnsureTotals(q)
			NewWithT(t).Expect(PreemptFor(q, nil, tc.leaving, tc.victims, tc.c)).To(Equal(tc.want))
		})
	}
}

// TestPreemptForProperties checks PreemptFor on random quotas against a
// model of its own (sums of CPU and GPUs; a stopped workspace keeps its
// place in the workspaces count) and every subset: the victims make the
// charge fit, no smaller set does, no set as small earlier in the order
// does; none when it fits, when the leaving suffice, or when even all
// would not.
func TestPreemptForProperties(t *testing.T) {
	for seed := range uint64(3000) {
		rng := rand.New(rand.NewPCG(seed, 3))
		hard := quotav1alpha1.QuotaLimits{CPU: ptr.To(resource.MustParse(fmt.Sprint(1 + rng.IntN(12)))),
			GPUs: []quotav1alpha1.GPULimit{{Name: "all", ResourceName: nv, Count: int64(rng.IntN(8))}}}
		if rng.IntN(3) == 0 {
			hard.Workspaces = ptr.To(int64(2 + rng.IntN(6)))
		}
		var counted, leaving, cands []quotav1alpha1.QuotaCharge
		for i := range rng.IntN(8) {
			c := cpuCharge(fmt.Sprintf("w%d", i), int64(rng.IntN(3)), fmt.Sprint(rng.IntN(4)))
			counted = append(counted, c)
			switch rng.IntN(4) {
			case 0:
				leaving = append(leaving, c)
			case 1, 2:
				cands = append(cands, c)
			}
		}
		q := tenantQuota(hard, counted...)
		EnsureTotals(q)
		c := cpuCharge("new", int64(rng.IntN(4)), fmt.Sprint(1+rng.IntN(5)))
		got := PreemptFor(q, nil, leaving, cands, c)

		var cpu, gpus int64
		for _, o := range counted {
			cpu, gpus = cpu+o.CPU.Value(), gpus+o.GPUs
		}
		fits := func(stopped []quotav1alpha1.QuotaCharge) bool {
			cpuLeft, gpuLeft := cpu, gpus
			for _, o := range stopped {
				cpuLeft, gpuLeft = cpuLeft-o.CPU.Value(), gpuLeft-o.GPUs
			}
			n := int64(len(counted)) + 1
			return cpuLeft+c.CPU.Value() <= hard.CPU.Value() && (c.GPUs == 0 || gpuLeft+c.GPUs <= hard.GPUs[0].Count) &&
				(hard.Workspaces == nil || n <= *hard.Workspaces)
		}
		with := func(idx []int) []quotav1alpha1.QuotaCharge {
			out := slices.Clone(leaving)
			for _, i := range idx {
				out = append(out, cands[i])
			}
			return out
		}
		fail := func(msg string) {
			t.Fatalf("seed %d: %s\nhard %+v\ncounted %v\nleaving %v\ncandidates %v\ncharge %v\ngot %+v", seed, msg, hard, counted, leaving, cands, c, got)
		}
		all := make([]int, len(cands))
		for i := range all {
			all[i] = i
		}
		switch {
		case got.Freeing != (len(leaving) > 0 && fits(leaving)):
			fail("freeing is wrong")
		case fits(leaving) || !fits(with(all)):
			if len(got.Victims) > 0 {
				fail("victims although it fits once the leaving go, or even all would not make it fit")
			}
			continue
		case !fits(with(got.Victims)):
			fail("the victims do not make it fit")
		}
		for mask := range 1 << len(cands) {
			var idx []int
			for i := range cands {
				if mask&(1<<i) != 0 {
					idx = append(idx, i)
				}
			}
			if len(idx) == 0 || len(idx) > len(got.Victims) || !fits(with(idx)) {
				continue
			}
			if len(idx) < len(got.Victims) || slices.Compare(idx, got.Victims) < 0 {
				fail(fmt.Sprintf("%v fits and comes first", idx))
			}
		}
	}
}
