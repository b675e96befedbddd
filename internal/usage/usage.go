// Package usage counts what admitted workspaces use over time. A Rate (GPUs
// of one resource and model, CPU, memory) held over an interval of whole
// seconds is GPU-seconds, CPU core-seconds and memory byte-seconds; a
// closed interval is added to a total and, for a tenant, split by UTC day.
// Intervals abut: a holder's next interval begins where the last one ended,
// both stamped to the second, so counting a charge in pieces counts exactly
// what counting it whole would, and no second is counted twice. What is
// held now is never stored: a reader adds it from the time it began
// (Now, Window).
package usage

import (
	"math/big"
	"time"

	"gopkg.in/inf.v0"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/gpu"
	"github.com/apiaryhq/apiary/internal/resources"
)

// MaxGPUEntries bounds a usage's list of GPU resources and models: past
// MaxGPUEntries-1 a new model is counted under its resource without a
// model, and past that under OtherResource.
const MaxGPUEntries = 64

// OtherResource names the GPU-seconds of resources beyond MaxGPUEntries.
const OtherResource = "(other)"

// Rate is what a holder holds at any moment.
type Rate struct {
	// GPUs of ResourceName, of Model when the holder asked for one.
	GPUs         int64
	ResourceName string
	Model        string
	// MilliCPU and Memory (bytes) of all replicas; saturated at MaxInt64.
	MilliCPU int64
	Memory   int64
}

// RateOf is the rate of a GPU demand (its node selector names the model)
// and CPU and memory totals. Negative amounts count nothing. A model no
// node label could hold (a selector adopted from a workspace delivered
// before Apiary admitted it is not checked against any node) counts under
// its resource, and a resource name beyond a Kubernetes name's length
// under OtherResource: a usage is always one the API server accepts, or
// the quota write that counts it would fail for good.
func RateOf(gpus int64, resourceName string, selector map[string]string, cpu, memory *resource.Quantity) Rate {
	r := Rate{ResourceName: resourceName, Model: selector[gpu.ModelLabel]}
	if len(r.Model) > validation.LabelValueMaxLength {
		r.Model = ""
	}
	if len(r.ResourceName) > validation.DNS1123SubdomainMaxLength {
		r.ResourceName = OtherResource
	}
	if gpus > 0 && resourceName != "" {
		r.GPUs = gpus
	}
	if cpu != nil && cpu.Sign() > 0 {
		r.MilliCPU = resources.Milli.SatCeil(*cpu)
	}
	if memory != nil && memory.Sign() > 0 {
		r.Memory = resources.Whole.SatCeil(*memory)
	}
	return r
}

// IsZero reports whether the rate holds nothing.
func (r Rate) IsZero() bool { return r.GPUs == 0 && r.MilliCPU == 0 && r.Memory == 0 }

// Seconds is the length of [from, to) in whole seconds (each end truncated
// to the second), 0 when to is not after from or from is unset.
func Seconds(from, to time.Time) int64 {
	if from.IsZero() {
		return 0
	}
	s := to.Truncate(time.Second).Unix() - from.Truncate(time.Second).Unix()
	return max(s, 0)
}

// Over is the usage of the rate over [from, to).
func (r Rate) Over(from, to time.Time) commonv1.ResourceUsage {
	var u commonv1.ResourceUsage
	s := Seconds(from, to)
	if s == 0 || r.IsZero() {
		return u
	}
	if r.GPUs > 0 {
		u.GPUs = []commonv1.GPUSeconds{{ResourceName: r.ResourceName, Model: r.Model, Seconds: resources.SatMul(r.GPUs, s)}}
	}
	if r.MilliCPU > 0 {
		u.CPU = product(r.MilliCPU, s, 3)
	}
	if r.Memory > 0 {
		u.Memory = product(r.Memory, s, 0)
	}
	return u
}

// product is a × s × 10^-scale, exact.
func product(a, s int64, scale inf.Scale) *resource.Quantity {
	v := new(big.Int).Mul(big.NewInt(a), big.NewInt(s))
	q := resource.NewDecimalQuantity(*inf.NewDecBig(v, scale), resource.DecimalSI)
	return q
}

// Add adds u to dst.
func Add(dst *commonv1.ResourceUsage, u commonv1.ResourceUsage) {
	for _, g := range u.GPUs {
		addGPU(dst, g)
	}
	dst.CPU = sum(dst.CPU, u.CPU)
	dst.Memory = sum(dst.Memory, u.Memory)
}

func addGPU(dst *commonv1.ResourceUsage, g commonv1.GPUSeconds) {
	if g.Seconds <= 0 {
		return
	}
	find := func(resource, model string) *commonv1.GPUSeconds {
		for i := range dst.GPUs {
			if dst.GPUs[i].ResourceName == resource && dst.GPUs[i].Model == model {
				return &dst.GPUs[i]
			}
		}
		return nil
	}
	e := find(g.ResourceName, g.Model)
	if e == nil && g.Model != "" && len(dst.GPUs) >= MaxGPUEntries-1 {
		g.Model = ""
		e = find(g.ResourceName, "")
	}
	if e == nil && len(dst.GPUs) >= MaxGPUEntries-1 {
		g.ResourceName, g.Model = OtherResource, ""
		e = find(OtherResource, "")
	}
	if e == nil {
		dst.GPUs = append(dst.GPUs, commonv1.GPUSeconds{ResourceName: g.ResourceName, Model: g.Model})
		e = &dst.GPUs[len(dst.GPUs)-1]
	}
	e.Seconds = resources.SatAdd(e.Seconds, g.Seconds)
}

func sum(a, b *resource.Quantity) *resource.Quantity {
	switch {
	case b == nil || b.IsZero():
		return a
	case a == nil:
		c := b.DeepCopy()
		return &c
	}
	c := a.DeepCopy()
	c.Add(*b)
	return &c
}

// GPUSecondsOf is the GPU-seconds of one resource, of every model.
func GPUSecondsOf(u commonv1.ResourceUsage, resourceName string) int64 {
	var n int64
	for _, g := range u.GPUs {
		if g.ResourceName == resourceName {
			n = resources.SatAdd(n, g.Seconds)
		}
	}
	return n
}

// AdmissionRate is what a workspace's admission holds: its GPUs of the
// admitted resource and selector, and its CPU and memory totals.
func AdmissionRate(a *workspacesv1.WorkspaceAdmission) Rate {
	return RateOf(resources.SatMul(a.GPUsPerReplica, int64(a.Replicas)), a.ResourceName, a.Selector, a.CPU, a.Memory)
}

// CountAdmission counts on a workspace's usage what its admission held
// from admittedAt to at, as the admission ends or is replaced: in the
// status write that ends it, so once.
func CountAdmission(st *workspacesv1.WorkspaceDeploymentStatus, a *workspacesv1.WorkspaceAdmission, at time.Time) {
	if a == nil {
		return
	}
	u := AdmissionRate(a).Over(a.AdmittedAt.Time, at)
	if len(u.GPUs) == 0 && u.CPU == nil && u.Memory == nil {
		return
	}
	if st.Usage == nil {
		st.Usage = &commonv1.ResourceUsage{}
	}
	Add(st.Usage, u)
}

// OfWorkspace is a workspace's usage up to now: what it counted and what
// its admission in force holds.
func OfWorkspace(st workspacesv1.WorkspaceDeploymentStatus, now time.Time) commonv1.ResourceUsage {
	var u commonv1.ResourceUsage
	if st.Usage != nil {
		Add(&u, *st.Usage)
	}
	if a := st.Admission; a != nil {
		Add(&u, AdmissionRate(a).Over(a.AdmittedAt.Time, now))
	}
	return u
}
