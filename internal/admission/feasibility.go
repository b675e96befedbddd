package admission

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/apiaryhq/apiary/internal/gpu"
	"github.com/apiaryhq/apiary/internal/resources"
)

// Totals are amounts of a cluster's resources.
type Totals struct {
	CPU, Memory, Storage resource.Quantity
	GPUs                 int64
}

// Feasibility says whether a workspace's demand fits what its cluster has
// free now. It is observability: the gate, not this verdict, decides.
type Feasibility struct {
	Fits bool
	// Demanded is what all replicas ask for; Available what is free.
	Demanded, Available Totals
	// Missing is the shortfall of each resource; nil when the demand fits.
	Missing *Totals
	Message string
}

// Feasible compares the demand of all replicas with what the cluster has
// free. CPU, memory and storage are summed over the schedulable nodes
// after what bound pods request, as the exalsius operator does (storage is
// compared with ephemeral storage, an approximation; no bin-packing). GPUs
// are taken from the gate's own decision on the request: available are the
// GPUs free for it on the nodes it matches (after bound pods, the
// admissions in force and the requests ahead of it), and they fit exactly
// when the gate found room for every replica (Decision.Room: admitted, or
// queued behind older requests while the room is there), so the two never
// disagree. gpus
// is nil for a request without GPUs; what names the GPUs in the message
// (a model, a vendor, or empty).
func Feasible(nodes []corev1.Node, pods []corev1.Pod, demand Totals, replicas int32, gpus *Decision, what string) Feasibility {
	f := Feasibility{Demanded: demand}
	f.Available = freeTotals(nodes, pods)
	missing := Totals{}
	short := false
	for _, r := range []struct {
		want, have *resource.Quantity
		miss       *resource.Quantity
		unit       resources.Unit
	}{
		{&f.Demanded.CPU, &f.Available.CPU, &missing.CPU, resources.Milli},
		{&f.Demanded.Memory, &f.Available.Memory, &missing.Memory, resources.Whole},
		{&f.Demanded.Storage, &f.Available.Storage, &missing.Storage, resources.Whole},
	} {
		// Counted, not compared as quantities: Quantity.Cmp builds 10^n
		// for an exponent n a tenant chose. A demand past int64 counts as
		// math.MaxInt64, what is free as it is (freeTotals).
		want, have := r.unit.SatCeil(*r.want), r.unit.SatCeil(*r.have)
		if want > have {
			*r.miss, short = *r.unit.Quantity(want-have, r.want.Format), true
		}
	}
	fragmented := false
	if gpus != nil {
		f.Available.GPUs = gpus.Free
		if !gpus.Room {
			short = true
			missing.GPUs = max(resources.SatSub(demand.GPUs, gpus.Free), 0)
			fragmented = missing.GPUs == 0
		}
	}
	f.Fits = !short
	if f.Fits {
		f.Message = fmt.Sprintf("Cluster has capacity for %d replica(s)", replicas)
		return f
	}
	f.Missing = &missing
	var parts []string
	if !missing.CPU.IsZero() {
		parts = append(parts, missing.CPU.String()+" CPU")
	}
	if !missing.Memory.IsZero() {
		parts = append(parts, missing.Memory.String()+" memory")
	}
	if !missing.Storage.IsZero() {
		parts = append(parts, missing.Storage.String()+" storage")
	}
	if missing.GPUs > 0 {
		parts = append(parts, strings.TrimSpace(fmt.Sprintf("%d %s GPU", missing.GPUs, what)))
	}
	f.Message = fmt.Sprintf("Insufficient capacity for %d replica(s)", replicas)
	if len(parts) > 0 {
		f.Message += "; missing " + strings.Join(parts, ", ")
	}
	if fragmented {
		f.Message += fmt.Sprintf("; %d GPU(s) are free in all, but no node has room for one replica", gpus.Free)
	}
	return f
}

// freeTotals sums CPU, memory and ephemeral storage over the schedulable
// nodes, minus what the bound, not terminated pods on them request. The
// sums are counted in milli-cores and bytes, never as quantities: a node's
// allocatable that does not count (negative, beyond int64) counts as none,
// and such a pod request as math.MaxInt64, so free is never over-counted.
func freeTotals(nodes []corev1.Node, pods []corev1.Pod) Totals {
	kinds := []struct {
		name        corev1.ResourceName
		unit        resources.Unit
		alloc, used resources.Sum
		format      resource.Format // of the first node's quantity
	}{
		{name: corev1.ResourceCPU, unit: resources.Milli},
		{name: corev1.ResourceMemory, unit: resources.Whole},
		{name: corev1.ResourceEphemeralStorage, unit: resources.Whole},
	}
	schedulable := map[string]bool{}
	for i := range nodes {
		n := &nodes[i]
		if !gpu.Schedulable(n) {
			continue
		}
		schedulable[n.Name] = true
		for k := range kinds {
			q, ok := n.Status.Allocatable[kinds[k].name]
			if !ok {
				continue
			}
			if c, err := kinds[k].unit.Ceil(q); err == nil {
				kinds[k].alloc.Add(c)
			}
			if kinds[k].format == "" && !q.IsZero() {
				kinds[k].format = q.Format // shown as the nodes show it
			}
		}
	}
	for i := range pods {
		p := &pods[i]
		if !schedulable[p.Spec.NodeName] || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for k := range kinds {
			for _, c := range p.Spec.Containers {
				if r, ok := c.Resources.Requests[kinds[k].name]; ok {
					kinds[k].used.Add(kinds[k].unit.SatCeil(r))
				}
			}
		}
	}
	var t Totals
	for k, q := range []*resource.Quantity{&t.CPU, &t.Memory, &t.Storage} {
		free := kinds[k].alloc.Minus(kinds[k].used)
		if kinds[k].format == "" {
			kinds[k].format = resource.DecimalSI
		}
		*q = *kinds[k].unit.Quantity(free.Int64(), kinds[k].format)
	}
	return t
}
