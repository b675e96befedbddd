package request

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/resources"
)

// FuzzOf checks Of on every input the CRD accepts (replicas 1..1000,
// gpuCount 0..64, cpu up to 4096, memory up to 64Ti, storage up to 1Pi per
// replica, in any unit): it never panics nor errs, each total is exactly the
// per-replica amount (rounded up to the unit the totals count in) times
// replicas, and the gate's request carries the same numbers. Outside the
// CRD's bounds it must not panic either.
func FuzzOf(f *testing.F) {
	f.Add(int32(1), int32(0), int64(0), int64(0), int64(0), uint8(0))
	f.Add(int32(1000), int32(64), int64(4096000), int64(64<<40), int64(1<<50), uint8(0))
	f.Add(int32(7), int32(3), int64(1), int64(1), int64(1), uint8(1))
	f.Add(int32(-1), int32(-5), int64(-1), int64(-1), int64(-1), uint8(2))
	f.Fuzz(func(t *testing.T, replicas, gpus int32, milliCPU, mem, storage int64, format uint8) {
		formats := []resource.Format{resource.DecimalSI, resource.BinarySI, resource.DecimalExponent}
		fm := formats[int(format)%len(formats)]
		res := workspacesv1.WorkspaceResourceSpec{Replicas: &replicas, PerReplica: &workspacesv1.PerReplicaResources{
			GPUCount: &gpus,
			CPU:      resource.NewMilliQuantity(milliCPU, fm),
			Memory:   resource.NewQuantity(mem, fm),
			Storage:  resource.NewQuantity(storage, fm),
		}}
		r := Of(res) // must not panic, whatever the input
		_ = r.GPU()
		_ = r.Totals()
		_ = r.Quota("ns", "w", "uid")
		if resources.Check(res) != nil {
			return // the CRD refuses it
		}
		if r.Err != nil {
			t.Fatalf("Of(%+v) erred on resources the CRD accepts: %v", res.PerReplica, r.Err)
		}
		n := int64(replicas)
		if r.Replicas != n || r.Total.GPUs != int64(gpus)*n {
			t.Fatalf("replicas %d × gpus %d: got replicas %d, total %d GPUs", replicas, gpus, r.Replicas, r.Total.GPUs)
		}
		for _, c := range []struct {
			name       string
			per, total *resource.Quantity
			unit       resources.Unit
		}{{"cpu", r.PerReplica.CPU, r.Total.CPU, resources.Milli}, {"memory", r.PerReplica.Memory, r.Total.Memory, resources.Whole},
			{"storage", r.PerReplica.Storage, r.Total.Storage, resources.Whole}} {
			per, err := c.unit.Ceil(*c.per)
			if err != nil {
				t.Fatalf("%s %s: %v", c.name, c.per, err)
			}
			total, err := c.unit.Ceil(*c.total)
			if err != nil || total != per*n {
				t.Fatalf("%s: %s × %d = %s, want %d in the unit (%v)", c.name, c.per, n, c.total, per*n, err)
			}
		}
		g := r.GPU()
		if gpus == 0 {
			if g != nil {
				t.Fatalf("no GPUs, but a gate request %+v", g)
			}
			return
		}
		if g == nil || g.PerReplica != int64(gpus) || int64(g.Replicas) != n || g.Demand() != r.Total.GPUs {
			t.Fatal(fmt.Sprintf("gate request %+v for %d × %d", g, replicas, gpus))
		}
	})
}
