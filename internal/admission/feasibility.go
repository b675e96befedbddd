package admission

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/apiaryhq/apiary/internal/gpu"
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
	}{
		{&f.Demanded.CPU, &f.Available.CPU, &missing.CPU},
		{&f.Demanded.Memory, &f.Available.Memory, &missing.Memory},
		{&f.Demanded.Storage, &f.Available.Storage, &missing.Storage},
	} {
		if r.want.Cmp(*r.have) > 0 {
			d := r.want.DeepCopy()
			d.Sub(*r.have)
			*r.miss, short = d, true
		}
	}
	fragmented := false
	if gpus != nil {
		f.Available.GPUs = gpus.Free
		if !gpus.Room {
			short = true
			missing.GPUs = max(demand.GPUs-gpus.Free, 0)
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
// nodes, minus what the bound, not terminated pods on them request.
func freeTotals(nodes []corev1.Node, pods []corev1.Pod) Totals {
	var t Totals
	schedulable := map[string]bool{}
	for i := range nodes {
		n := &nodes[i]
		if !gpu.Schedulable(n) {
			continue
		}
		schedulable[n.Name] = true
		t.CPU.Add(n.Status.Allocatable[corev1.ResourceCPU])
		t.Memory.Add(n.Status.Allocatable[corev1.ResourceMemory])
		t.Storage.Add(n.Status.Allocatable[corev1.ResourceEphemeralStorage])
	}
	for i := range pods {
		p := &pods[i]
		if !schedulable[p.Spec.NodeName] || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		t.CPU.Sub(podQuantity(p, corev1.ResourceCPU))
		t.Memory.Sub(podQuantity(p, corev1.ResourceMemory))
		t.Storage.Sub(podQuantity(p, corev1.ResourceEphemeralStorage))
	}
	for _, q := range []*resource.Quantity{&t.CPU, &t.Memory, &t.Storage} {
		if q.Sign() < 0 {
			*q = resource.Quantity{}
		}
	}
	return t
}

// podQuantity is what a pod requests of a resource: its containers' requests.
func podQuantity(p *corev1.Pod, name corev1.ResourceName) resource.Quantity {
	var q resource.Quantity
	for i := range p.Spec.Containers {
		if r, ok := p.Spec.Containers[i].Resources.Requests[name]; ok {
			q.Add(r)
		}
	}
	return q
}
