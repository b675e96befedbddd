// Package quota enforces TenantQuotas: which quotas select a namespace, what
// a workspace charges against each limit, whether a charge fits, and how a
// quota's totals and its workspaces' records of their charges change
// together. A quota's status keeps totals (used) and a bounded list of
// changes in flight; each workspace keeps its own share on its status. A
// change is written to the quota first, with its resourceVersion (see
// Ledger), the way Kubernetes' ResourceQuota admission reserves usage, so
// that several Apiary replicas admitting for one tenant at the same moment
// conflict and re-check instead of over-booking it; then to the workspace;
// then it leaves the quota's list (docs/admission.md, "the ledger").
//
// Everything but Ledger and the recount is pure: Move, Drop, Forget,
// EnsureTotals and Refresh edit the quota they are given, and nothing else
// modifies its arguments.
package quota

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/fluxcd/pkg/runtime/conditions"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	"github.com/apiaryhq/apiary/internal/gpu"
	"github.com/apiaryhq/apiary/internal/resources"
)

// Request is what one workspace asks of its tenant's quotas.
type Request struct {
	Namespace, Name string
	UID             types.UID
	// GPUs is the GPU demand of all replicas, of ResourceName, on nodes
	// matching Selector.
	GPUs         int64
	ResourceName string
	Selector     map[string]string
	// CPU and Memory are the totals of all replicas; nil when unset.
	CPU, Memory *resource.Quantity
}

// Charge is the ledger entry of a request, charged at a time. An amount
// that is negative or beyond int64 is entered as the most it could be
// (see resources.Unit.Counted), never dropped.
func (r Request) Charge(at metav1.Time) quotav1alpha1.QuotaCharge {
	c := quotav1alpha1.QuotaCharge{Namespace: r.Namespace, Name: r.Name, UID: r.UID, ChargedAt: at}
	if r.GPUs != 0 {
		c.GPUs, c.ResourceName = counted(r.GPUs), r.ResourceName
		if len(r.Selector) > 0 {
			c.Selector = make(map[string]string, len(r.Selector))
			for k, v := range r.Selector {
				c.Selector[k] = v
			}
		}
	}
	if r.CPU != nil && !r.CPU.IsZero() {
		c.CPU, _ = resources.Milli.Counted(*r.CPU)
	}
	if r.Memory != nil && !r.Memory.IsZero() {
		c.Memory, _ = resources.Whole.Counted(*r.Memory)
	}
	return c
}

// Selects reports whether a quota selects a namespace with these labels.
// A selector that does not parse selects nothing and is returned as an error.
func Selects(q *quotav1alpha1.TenantQuota, nsLabels map[string]string) (bool, error) {
	sel, err := metav1.LabelSelectorAsSelector(&q.Spec.NamespaceSelector)
	if err != nil {
		return false, fmt.Errorf("namespaceSelector of TenantQuota %q: %w", q.Name, err)
	}
	return sel.Matches(labels.Set(nsLabels)), nil
}

// limitResource is the extended resource of a GPU limit.
func limitResource(l quotav1alpha1.GPULimit) string { return gpu.ResourceOrDefault(l.ResourceName) }

// Find returns the charge of a workspace, or nil.
func Find(charges []quotav1alpha1.QuotaCharge, uid types.UID) *quotav1alpha1.QuotaCharge {
	for i := range charges {
		if charges[i].UID == uid {
			return &charges[i]
		}
	}
	return nil
}

// Upsert returns the ledger with a workspace's charge added or replaced,
// sorted by namespace and name.
func Upsert(charges []quotav1alpha1.QuotaCharge, c quotav1alpha1.QuotaCharge) []quotav1alpha1.QuotaCharge {
	out, _ := Remove(charges, c.UID)
	out = append(out, c)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Remove returns the ledger without a workspace's charge, and whether it had one.
func Remove(charges []quotav1alpha1.QuotaCharge, uid types.UID) ([]quotav1alpha1.QuotaCharge, bool) {
	out := make([]quotav1alpha1.QuotaCharge, 0, len(charges))
	found := false
	for _, c := range charges {
		if c.UID == uid {
			found = true
			continue
		}
		out = append(out, c)
	}
	return out, found
}

// SameAmounts reports whether two ledger entries are the same workspace's
// and hold the same GPUs (of the same resource and selector), CPU and
// memory, whenever they were written (ChargedAt is ignored).
func SameAmounts(a, b quotav1alpha1.QuotaCharge) bool {
	a.ChargedAt, b.ChargedAt = metav1.Time{}, metav1.Time{}
	return a.Namespace == b.Namespace && a.Name == b.Name && a.UID == b.UID && a.GPUs == b.GPUs &&
		a.ResourceName == b.ResourceName && sameLabels(a.Selector, b.Selector) &&
		sameQuantity(a.CPU, b.CPU) && sameQuantity(a.Memory, b.Memory) &&
		sameCounts(a.Borrowed, b.Borrowed) && sameCounts(a.Lent, b.Lent)
}

// sameCounts reports whether two lists count the same GPUs against each limit.
func sameCounts(a, b []commonv1.LimitGPUs) bool {
	for _, list := range [][]commonv1.LimitGPUs{a, b} {
		for _, g := range list {
			if limitCount(a, g.Limit) != limitCount(b, g.Limit) {
				return false
			}
		}
	}
	return true
}

func sameLabels(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if got, ok := b[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func sameQuantity(a, b *resource.Quantity) bool {
	if a == nil || b == nil {
		return (a == nil || a.IsZero()) && (b == nil || b.IsZero())
	}
	return a.Cmp(*b) == 0
}

// Refresh recomputes what a quota's status derives from its spec and
// totals: the limits enforced (their counts; GPU limits that changed
// otherwise wait for the controller's recount), the summary and the
// WithinLimits condition. Every writer calls it before writing.
func Refresh(q *quotav1alpha1.TenantQuota) {
	EnsureTotals(q)
	hard := q.Spec.Hard
	st := &q.Status
	if SameGPULimits(hard.GPUs, st.Hard.GPUs) {
		st.Hard = *hard.DeepCopy()
	}
	all := usedTotals(q)
	st.Used = all.usage(st.Hard)
	over := all.over(st.Hard)
	st.Summary = summary(st.Hard, st.Used)
	if len(over) > 0 {
		conditions.MarkFalse(q, quotav1alpha1.WithinLimitsCondition, quotav1alpha1.OverLimitReason,
			"Used exceeds %s; new workspaces wait, running ones stay", strings.Join(over, ", "))
	} else {
		conditions.MarkTrue(q, quotav1alpha1.WithinLimitsCondition, quotav1alpha1.EnforcedReason, "Used is within every limit")
	}
}

// summary is used against hard for every limit set, e.g.
// "gpus/h100: 6/8, workspaces: 3/10".
func summary(hard quotav1alpha1.QuotaLimits, u quotav1alpha1.QuotaUsage) string {
	var parts []string
	for i, l := range hard.GPUs {
		part := fmt.Sprintf("gpus/%s: %d/%d", l.Name, u.GPUs[i].Count, l.Count)
		var loans []string
		if b := u.GPUs[i].Borrowed; b > 0 {
			loans = append(loans, fmt.Sprintf("%d borrowed", b))
		}
		if n := u.GPUs[i].Lent; n > 0 {
			loans = append(loans, fmt.Sprintf("%d lent", n))
		}
		if len(loans) > 0 {
			part += " (" + strings.Join(loans, ", ") + ")"
		}
		parts = append(parts, part)
	}
	if hard.Workspaces != nil {
		parts = append(parts, fmt.Sprintf("workspaces: %d/%d", u.Workspaces, *hard.Workspaces))
	} else {
		parts = append(parts, fmt.Sprintf("workspaces: %d", u.Workspaces))
	}
	if hard.CPU != nil {
		parts = append(parts, fmt.Sprintf("cpu: %s/%s", u.CPU, hard.CPU))
	}
	if hard.Memory != nil {
		parts = append(parts, fmt.Sprintf("memory: %s/%s", u.Memory, hard.Memory))
	}
	return strings.Join(parts, ", ")
}

// RoomGrew reports whether a quota may now admit what it refused before:
// its spec changed, its usage was recounted, or a total went down.
func RoomGrew(old, cur *quotav1alpha1.TenantQuota) bool {
	if old.Generation != cur.Generation || !old.Status.Totals || !SameGPULimits(old.Status.Hard.GPUs, cur.Status.Hard.GPUs) {
		return true
	}
	o, n := usedTotals(old), usedTotals(cur)
	if n.workspaces < o.workspaces || n.cpu.Int64() < o.cpu.Int64() || n.memory.Int64() < o.memory.Int64() {
		return true
	}
	for i := range n.gpus {
		if n.gpus[i].Int64() < o.gpus[i].Int64() {
			return true
		}
	}
	return false
}

// counted is a charge's GPU count as Usage counts it: a negative one as
// math.MaxInt64.
func counted(gpus int64) int64 {
	if gpus < 0 {
		return math.MaxInt64
	}
	return gpus
}
