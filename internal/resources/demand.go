package resources

import (
	"errors"
	"fmt"
	"math"

	"k8s.io/apimachinery/pkg/api/resource"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// Replicas is the replica count of resources: 1 when unset.
func Replicas(res workspacesv1.WorkspaceResourceSpec) int64 {
	if res.Replicas == nil {
		return 1
	}
	return int64(*res.Replicas)
}

// Demand is what all replicas of a workspace's resources ask for.
type Demand struct {
	Replicas int64
	// GPUsPerReplica is perReplica.gpuCount; GPUs is that times Replicas.
	GPUsPerReplica, GPUs int64
	// CPU (in milli-units), Memory and Storage (in whole units) are per
	// replica, rounded up, times Replicas; nil when unset.
	CPU, Memory, Storage *resource.Quantity
}

// DemandOf is the exact demand of resolved resources. A product that is
// negative or overflows is an error naming its field, wrapping ErrNegative
// or ErrOverflow. It applies no Limits: Check does, before admitting.
func DemandOf(res workspacesv1.WorkspaceResourceSpec) (Demand, error) {
	d := Demand{Replicas: Replicas(res)}
	if d.Replicas < 0 {
		return Demand{}, fmt.Errorf("replicas %d %w", d.Replicas, ErrNegative)
	}
	pr := res.PerReplica
	if pr == nil {
		return d, nil
	}
	var errs []error
	if pr.GPUCount != nil {
		d.GPUsPerReplica = int64(*pr.GPUCount)
		var err error
		if d.GPUs, err = Mul(d.GPUsPerReplica, d.Replicas); err != nil {
			errs = append(errs, fmt.Errorf("perReplica.gpuCount %d × replicas %d: %w", d.GPUsPerReplica, d.Replicas, err))
		}
	}
	for _, q := range []struct {
		field string
		per   *resource.Quantity
		unit  Unit
		out   **resource.Quantity
	}{
		{"perReplica.cpu", pr.CPU, Milli, &d.CPU},
		{"perReplica.memory", pr.Memory, Whole, &d.Memory},
		{"perReplica.storage", pr.Storage, Whole, &d.Storage},
	} {
		if q.per == nil {
			continue
		}
		total, err := q.unit.Times(*q.per, d.Replicas)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %s × replicas %d: %w", q.field, q.per, d.Replicas, err))
			continue
		}
		*q.out = total
	}
	if err := errors.Join(errs...); err != nil {
		return Demand{}, err
	}
	return d, nil
}

// GPUDemand is the GPUs of replicas that each take perReplica: 0 when
// either is zero or negative (that asks for no GPUs; the API and Check
// refuse both), else the product saturated at math.MaxInt64.
func GPUDemand(perReplica, replicas int64) int64 {
	if perReplica <= 0 || replicas <= 0 {
		return 0
	}
	return SatMul(perReplica, replicas)
}

// Charge is what an admitted workspace holds of its tenant's quotas.
type Charge struct {
	// GPUs of all replicas.
	GPUs int64
	// CPU and Memory of all replicas; nil when unset.
	CPU, Memory *resource.Quantity
}

// AdmissionCharge is the charge of an admission record: gpusPerReplica ×
// replicas GPUs, and the CPU and memory totals it recorded. Both the
// workspace's admission (which writes the charge) and the TenantQuota's
// controller (which checks the ledger against the admissions in force) use
// it, so they agree. A record that does not describe a charge (a negative
// amount, a product or a total beyond int64) is an error naming the field;
// the charge returned with it counts that field as the most it could be
// (math.MaxInt64 GPUs, milli-cores or bytes), for a caller that must record
// something: over-counting a tenant is safe, under-counting is not.
func AdmissionCharge(a *workspacesv1.WorkspaceAdmission) (Charge, error) {
	var c Charge
	if a == nil {
		return c, nil
	}
	var errs []error
	switch {
	case a.GPUsPerReplica == 0 || a.Replicas == 0:
	case a.GPUsPerReplica < 0 || a.Replicas < 0:
		c.GPUs = math.MaxInt64
		errs = append(errs, fmt.Errorf("admission.gpusPerReplica %d × replicas %d: %w", a.GPUsPerReplica, a.Replicas, ErrNegative))
	default:
		c.GPUs = SatMul(a.GPUsPerReplica, int64(a.Replicas))
		if c.GPUs == math.MaxInt64 {
			errs = append(errs, fmt.Errorf("admission.gpusPerReplica %d × replicas %d: %w", a.GPUsPerReplica, a.Replicas, ErrOverflow))
		}
	}
	for _, q := range []struct {
		field string
		total *resource.Quantity
		unit  Unit
		out   **resource.Quantity
	}{
		{"admission.cpu", a.CPU, Milli, &c.CPU},
		{"admission.memory", a.Memory, Whole, &c.Memory},
	} {
		if q.total == nil {
			continue
		}
		var err error
		if *q.out, err = q.unit.Counted(*q.total); err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", q.field, q.total, err))
		}
	}
	return c, errors.Join(errs...)
}
