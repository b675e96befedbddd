// Package request computes what a workspace asks for, in one place: its
// GPUs (count, vendor, resource and node selector), CPU, memory and storage,
// per replica and for all replicas. The gate, the quota ledger, the
// feasibility verdict, the metrics and the lifecycle all read a workspace's
// request through Of, so they never disagree on it.
//
// Of is pure and total: it never panics, and a product that would overflow
// (which resources.Check and the CRD bounds refuse) is reported in Err with
// the GPU total saturated at math.MaxInt64 and the CPU, memory and storage
// totals left nil.
package request

import (
	"math"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/admission"
	"github.com/apiaryhq/apiary/internal/gpu"
	"github.com/apiaryhq/apiary/internal/quota"
	"github.com/apiaryhq/apiary/internal/resources"
)

// Amounts are the resources of one replica, or of all of them.
type Amounts struct {
	// GPUs is a count of GPUs of the request's resource.
	GPUs int64
	// CPU, Memory and Storage are nil when unset. Totals are counted in
	// milli-units (CPU) and whole units (memory, storage), each replica's
	// amount rounded up.
	CPU, Memory, Storage *resource.Quantity
}

// Request is what a workspace's resolved resources ask for.
type Request struct {
	// Replicas is the number of replicas: 1 when unset.
	Replicas int64
	// PerReplica is what one replica asks for; Total what all of them do.
	PerReplica, Total Amounts
	// Vendor is the GPU vendor the resources name, "" when none.
	Vendor string
	// Resource is the extended resource of Vendor; "" when no vendor is
	// named (the nodes decide) or the vendor is unknown.
	Resource string
	// Type is the GPU model (gpuType), "" when none.
	Type string
	// Selector is the node selector of the GPUs (gpuType and
	// gpuNodeSelector), nil when they name none.
	Selector map[string]string
	// Err names a total that could not be counted (a negative amount or an
	// overflow); resources.Check refuses such resources before admission.
	Err error
}

// Of is the request of resolved resources.
func Of(res workspacesv1.WorkspaceResourceSpec) Request {
	r := Request{Replicas: resources.Replicas(res)}
	pr := res.PerReplica
	if pr != nil {
		if pr.GPUCount != nil {
			r.PerReplica.GPUs = int64(*pr.GPUCount)
		}
		r.PerReplica.CPU, r.PerReplica.Memory, r.PerReplica.Storage = pr.CPU, pr.Memory, pr.Storage
		if pr.GPUVendor != nil && *pr.GPUVendor != "" {
			r.Vendor = string(*pr.GPUVendor)
			r.Resource, _ = gpu.ResourceFor(r.Vendor)
		}
		if pr.GPUType != nil {
			r.Type = *pr.GPUType
		}
		r.Selector = gpu.Selector(pr.GPUType, pr.GPUNodeSelector)
	}
	d, err := resources.DemandOf(res)
	r.Err = err
	r.Total = Amounts{GPUs: resources.GPUDemand(r.PerReplica.GPUs, r.Replicas), CPU: d.CPU, Memory: d.Memory, Storage: d.Storage}
	return r
}

// HasGPUs reports whether the request asks for GPUs at all.
func (r Request) HasGPUs() bool { return r.Total.GPUs > 0 }

// GPU is what the gate places of the request: nil without GPUs. Its
// resource follows the vendor when one is set; the nodes decide otherwise.
func (r Request) GPU() *admission.Request {
	if !r.HasGPUs() {
		return nil
	}
	replicas := int32(min(r.Replicas, math.MaxInt32))
	return &admission.Request{Selector: r.Selector, Resource: r.Resource, PerReplica: r.PerReplica.GPUs, Replicas: replicas}
}

// Totals is the request of all replicas as the feasibility verdict reads it.
func (r Request) Totals() admission.Totals {
	t := admission.Totals{GPUs: r.Total.GPUs}
	for _, q := range []struct {
		from *resource.Quantity
		to   *resource.Quantity
	}{{r.Total.CPU, &t.CPU}, {r.Total.Memory, &t.Memory}, {r.Total.Storage, &t.Storage}} {
		if q.from != nil {
			*q.to = q.from.DeepCopy()
		}
	}
	return t
}

// What names the request's GPUs in messages: the model, else the vendor.
func (r Request) What() string {
	if r.Type != "" {
		return r.Type
	}
	return r.Vendor
}

// Quota is what the request would charge its tenant's quotas: GPUs of its
// resource, the default resource when it names no vendor (gpu.ResourceOrDefault).
func (r Request) Quota(namespace, name string, uid types.UID) quota.Request {
	q := quota.Request{Namespace: namespace, Name: name, UID: uid, CPU: r.Total.CPU, Memory: r.Total.Memory}
	if r.HasGPUs() {
		q.GPUs, q.ResourceName, q.Selector = r.Total.GPUs, gpu.ResourceOrDefault(r.Resource), r.Selector
	}
	return q
}
