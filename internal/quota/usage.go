package quota

import (
	"fmt"
	"math"

	"k8s.io/apimachinery/pkg/api/resource"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	"github.com/apiaryhq/apiary/internal/gpu"
	"github.com/apiaryhq/apiary/internal/resources"
)

// amounts is what one charge counts against each limit of a quota: GPUs
// per GPU limit, CPU in milli-units and memory in bytes, each rounded up.
// An amount that is negative or beyond int64 (a corrupt record) counts as
// math.MaxInt64, the most it could be: over-counting refuses a workspace
// that might fit, under-counting would admit one that does not.
//
// A workspace's charge takes a place in the workspaces count (slot) and
// may borrow some of the GPUs it counts against a GPU limit from the
// quota's cohort; a loan (Lent) counts only the GPUs it lends against the
// limits it names, as lent (docs/admission.md, "Cohorts").
type amounts struct {
	slot           int64
	gpus           []int64
	borrowed, lent []int64
	cpu, memory    int64
}

func amountsOf(hard quotav1alpha1.QuotaLimits, c *quotav1alpha1.QuotaCharge) amounts {
	n := len(hard.GPUs)
	a := amounts{gpus: make([]int64, n), borrowed: make([]int64, n), lent: make([]int64, n)}
	if c == nil {
		return a
	}
	if IsLoan(*c) {
		for i, l := range hard.GPUs {
			a.gpus[i] = limitCount(c.Lent, l.Name)
			a.lent[i] = a.gpus[i]
		}
		return a
	}
	a.slot = 1
	for i, l := range hard.GPUs {
		a.gpus[i] = GPUsCounted(l, *c)
		a.borrowed[i] = min(limitCount(c.Borrowed, l.Name), a.gpus[i])
	}
	if c.CPU != nil {
		a.cpu = resources.Milli.SatCeil(*c.CPU)
	}
	if c.Memory != nil {
		a.memory = resources.Whole.SatCeil(*c.Memory)
	}
	return a
}

// totals are the exact sums of charges against a quota's limits, read
// back saturated (see resources.Sum), with the formats to show them in.
type totals struct {
	workspaces              int64
	gpus                    []resources.Sum
	borrowed, lent          []resources.Sum
	cpu, memory             resources.Sum
	cpuFormat, memoryFormat resource.Format
}

func totalsOf(hard quotav1alpha1.QuotaLimits, charges []quotav1alpha1.QuotaCharge) totals {
	t := newTotals(len(hard.GPUs))
	cpuSet, memorySet := false, false
	for i := range charges {
		c := &charges[i]
		t.put(amountsOf(hard, c), 1)
		if !cpuSet && c.CPU != nil && !c.CPU.IsZero() {
			t.cpuFormat, cpuSet = c.CPU.Format, true
		}
		if !memorySet && c.Memory != nil && !c.Memory.IsZero() {
			t.memoryFormat, memorySet = c.Memory.Format, true
		}
	}
	return t
}

func newTotals(limits int) totals {
	return totals{gpus: make([]resources.Sum, limits), borrowed: make([]resources.Sum, limits), lent: make([]resources.Sum, limits),
		cpuFormat: resource.DecimalSI, memoryFormat: resource.DecimalSI}
}

// clone is a copy that shares nothing with t.
func (t totals) clone() totals {
	t.gpus = append([]resources.Sum(nil), t.gpus...)
	t.borrowed = append([]resources.Sum(nil), t.borrowed...)
	t.lent = append([]resources.Sum(nil), t.lent...)
	return t
}

// nominal is what the totals take of GPU limit i's count (the tenant's
// nominal quota): its GPUs but those borrowed, with those lent. A
// saturated total takes all of it.
func (t totals) nominal(i int) resources.Sum {
	if t.gpus[i].Saturated() {
		return t.gpus[i]
	}
	return t.gpus[i].Minus(t.borrowed[i])
}

// put adds (sign 1) or removes (sign -1) the amounts of one charge.
func (t *totals) put(a amounts, sign int) {
	add := func(s *resources.Sum, n int64) {
		if sign > 0 {
			s.Add(n)
		} else {
			s.Sub(n)
		}
	}
	t.workspaces = max(t.workspaces+int64(sign)*a.slot, 0)
	for i := range t.gpus {
		add(&t.gpus[i], a.gpus[i])
		add(&t.borrowed[i], a.borrowed[i])
		add(&t.lent[i], a.lent[i])
	}
	add(&t.cpu, a.cpu)
	add(&t.memory, a.memory)
}

// usage is the totals as a quota's status shows them, and keeps them:
// the workspace count, each GPU limit of hard, CPU and memory.
func (t totals) usage(hard quotav1alpha1.QuotaLimits) quotav1alpha1.QuotaUsage {
	u := quotav1alpha1.QuotaUsage{Workspaces: t.workspaces}
	for i, l := range hard.GPUs {
		u.GPUs = append(u.GPUs, quotav1alpha1.GPUUsage{Name: l.Name, Count: t.gpus[i].Int64(),
			Borrowed: t.borrowed[i].Int64(), Lent: t.lent[i].Int64()})
	}
	u.CPU = resources.Milli.Quantity(t.cpu.Int64(), t.cpuFormat)
	u.Memory = resources.Whole.Quantity(t.memory.Int64(), t.memoryFormat)
	return u
}

// usedTotals reads the totals a quota's status keeps (EnsureTotals),
// against the GPU limits of status.hard. A total written saturated stays
// saturated (resources.Stored).
func usedTotals(q *quotav1alpha1.TenantQuota) totals {
	hard, used := q.Status.Hard, q.Status.Used
	t := newTotals(len(hard.GPUs))
	t.workspaces = used.Workspaces
	for i, l := range hard.GPUs {
		for _, g := range used.GPUs {
			if g.Name == l.Name {
				t.gpus[i], t.borrowed[i], t.lent[i] = resources.Stored(g.Count), storedPart(g.Borrowed), storedPart(g.Lent)
			}
		}
	}
	if used.CPU != nil {
		t.cpu = resources.Stored(resources.Milli.SatCeil(*used.CPU))
		if !used.CPU.IsZero() {
			t.cpuFormat = used.CPU.Format
		}
	}
	if used.Memory != nil {
		t.memory = resources.Stored(resources.Whole.SatCeil(*used.Memory))
		if !used.Memory.IsZero() {
			t.memoryFormat = used.Memory.Format
		}
	}
	return t
}

// noteFormats takes the formats of a charge's CPU and memory for totals
// that were zero, so that used reads as the charges are written.
func (t *totals) noteFormats(c *quotav1alpha1.QuotaCharge) {
	if c == nil {
		return
	}
	if c.CPU != nil && !c.CPU.IsZero() && t.cpu.Int64() == resources.Milli.SatCeil(*c.CPU) {
		t.cpuFormat = c.CPU.Format
	}
	if c.Memory != nil && !c.Memory.IsZero() && t.memory.Int64() == resources.Whole.SatCeil(*c.Memory) {
		t.memoryFormat = c.Memory.Format
	}
}

// over names the limits the totals exceed. A total that saturated exceeds
// every limit.
func (t totals) over(hard quotav1alpha1.QuotaLimits) []string {
	var out []string
	if hard.Workspaces != nil && t.workspaces > *hard.Workspaces {
		out = append(out, "workspaces")
	}
	for i, l := range hard.GPUs {
		if t.nominal(i).Exceeds(l.Count) {
			out = append(out, fmt.Sprintf("gpus %q", l.Name))
		}
		if l.BorrowingLimit != nil && t.borrowed[i].Exceeds(*l.BorrowingLimit) {
			out = append(out, fmt.Sprintf("gpus %q borrowingLimit", l.Name))
		}
		if l.LendingLimit != nil && t.lent[i].Exceeds(*l.LendingLimit) {
			out = append(out, fmt.Sprintf("gpus %q lendingLimit", l.Name))
		}
	}
	if hard.CPU != nil && resources.Milli.Exceeds(t.cpu, *hard.CPU) {
		out = append(out, "cpu")
	}
	if hard.Memory != nil && resources.Whole.Exceeds(t.memory, *hard.Memory) {
		out = append(out, "memory")
	}
	return out
}

// Usage sums charges against limits: the workspace count always, each GPU
// limit (0 when nothing counts), CPU and memory when limited. No sum
// overflows or goes negative: one that would pass math.MaxInt64 (GPUs,
// milli-cores, bytes) shows math.MaxInt64, and a quota holding it is over
// every limit it has on that resource.
func Usage(hard quotav1alpha1.QuotaLimits, charges []quotav1alpha1.QuotaCharge) quotav1alpha1.QuotaUsage {
	return totalsOf(hard, charges).usage(hard)
}

// GPUsCounted is what a GPU limit counts of a charge: its GPUs when they are
// of the limit's resource and its selector pins the limit's model and node
// labels, else nothing. A negative count, which no admission writes, counts
// as math.MaxInt64.
func GPUsCounted(l quotav1alpha1.GPULimit, c quotav1alpha1.QuotaCharge) int64 {
	if c.GPUs == 0 || c.ResourceName != limitResource(l) {
		return 0
	}
	if l.GPUModel != "" && c.Selector[gpu.ModelLabel] != l.GPUModel {
		return 0
	}
	for k, v := range l.NodeSelector {
		if got, ok := c.Selector[k]; !ok || got != v {
			return 0
		}
	}
	return counted(c.GPUs)
}

// storedPart is a part of a total (borrowed, lent) read back: unlike the
// total itself, a corrupt (negative or saturated) one is read as 0, as
// what is borrowed lowers what counts against the nominal quota; the
// loans themselves are counted in full in the total.
func storedPart(n int64) resources.Sum {
	if n <= 0 || n == math.MaxInt64 {
		return resources.Sum{}
	}
	return resources.Stored(n)
}

// limitCount is the GPUs a list counts against a limit, by its name; a
// negative count as math.MaxInt64.
func limitCount(list []commonv1.LimitGPUs, name string) int64 {
	var n int64
	for _, g := range list {
		if g.Limit == name {
			n = resources.SatAdd(n, counted(g.Count))
		}
	}
	return n
}

// IsLoan reports whether a charge is a loan to a workspace of another
// member of the cohort.
func IsLoan(c quotav1alpha1.QuotaCharge) bool { return len(c.Lent) > 0 }
