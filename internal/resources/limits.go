package resources

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// ErrOutOfBounds means a workspace asks for more than Limits accept, or
// for less than nothing.
var ErrOutOfBounds = errors.New("is out of bounds")

// Limits are the most one workspace may ask for. The CRDs refuse the same
// bounds (api/workspaces/v1); the code checks them again, since a class or
// a workspace stored before the bounds existed still holds what it held.
// Within them, the totals of 1000 replicas stay far inside int64: 4.1e9
// milli-cores, 7.0e16 bytes of memory, 1.1e18 bytes of storage, 64000 GPUs.
type Limits struct {
	// Replicas is 1000: far more pods than one workspace (a notebook, a
	// training job) runs, and it bounds the per-replica loops of placement.
	Replicas int32
	// GPUsPerReplica is 64: a replica is one pod on one node, and the
	// largest GPU nodes carry 8 to 16 GPUs.
	GPUsPerReplica int32
	// CPUPerReplica is 4096 cores: the largest servers have under 2000
	// hardware threads.
	CPUPerReplica resource.Quantity
	// MemoryPerReplica is 64Ti: the largest single machines hold 32 to 48 TiB.
	MemoryPerReplica resource.Quantity
	// StoragePerReplica is 1Pi: no workspace volume is larger.
	StoragePerReplica resource.Quantity
}

// DefaultLimits are the limits Apiary enforces.
var DefaultLimits = Limits{
	Replicas:          1000,
	GPUsPerReplica:    64,
	CPUPerReplica:     resource.MustParse("4096"),
	MemoryPerReplica:  resource.MustParse("64Ti"),
	StoragePerReplica: resource.MustParse("1Pi"),
}

// Check refuses resources beyond the default limits; see Limits.Check.
func Check(res workspacesv1.WorkspaceResourceSpec) error { return DefaultLimits.Check(res) }

// Check refuses resources (a class's defaults, a workspace's overrides or
// the merge of both) that ask for more than the limits, or for a negative
// amount. The error names every such field and wraps ErrOutOfBounds.
func (l Limits) Check(res workspacesv1.WorkspaceResourceSpec) error {
	var errs []error
	if r := res.Replicas; r != nil && (*r < 1 || *r > l.Replicas) {
		errs = append(errs, fmt.Errorf("replicas %d %w: it must be 1 to %d", *r, ErrOutOfBounds, l.Replicas))
	}
	if pr := res.PerReplica; pr != nil {
		if g := pr.GPUCount; g != nil && (*g < 0 || *g > l.GPUsPerReplica) {
			errs = append(errs, fmt.Errorf("perReplica.gpuCount %d %w: it must be 0 to %d", *g, ErrOutOfBounds, l.GPUsPerReplica))
		}
		for _, q := range []struct {
			field    string
			got, max *resource.Quantity
			unit     Unit
		}{
			{"perReplica.cpu", pr.CPU, &l.CPUPerReplica, Milli},
			{"perReplica.memory", pr.Memory, &l.MemoryPerReplica, Whole},
			{"perReplica.storage", pr.Storage, &l.StoragePerReplica, Whole},
		} {
			if q.got != nil && !within(*q.got, *q.max, q.unit) {
				errs = append(errs, fmt.Errorf("%s %s %w: it must be 0 to %s", q.field, q.got, ErrOutOfBounds, q.max))
			}
		}
	}
	return errors.Join(errs...)
}

// within reports whether 0 ≤ q ≤ max, counted in the unit: Quantity.Cmp
// would build 10^n for an exponent n of a tenant's choosing.
func within(q, max resource.Quantity, u Unit) bool {
	n, err := u.Ceil(q)
	if err != nil {
		return false
	}
	m, err := u.Floor(max)
	return err == nil && n <= m
}
