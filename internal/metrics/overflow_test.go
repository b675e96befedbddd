package metrics

import (
	"math"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"

	"github.com/apiaryhq/apiary/internal/admission"
)

// What pods take of a node saturates: two pods of math.MaxInt64 GPUs
// wrapped to -2 and showed the node with 10 free.
func TestGateFreeGPUsNeverWrap(t *testing.T) {
	g := NewWithT(t)
	cd := types.NamespacedName{Namespace: "team-a", Name: "gate-wrap"}
	snap := admission.Snapshot{
		Nodes: []admission.Node{{Name: "n1", Schedulable: true, GPUs: []admission.GPU{{Resource: "nvidia.com/gpu", Allocatable: 8}}},
			{Name: "n2", Schedulable: true, GPUs: []admission.GPU{{Resource: "nvidia.com/gpu", Allocatable: math.MaxInt64}}},
			{Name: "n3", Schedulable: true, GPUs: []admission.GPU{{Resource: "nvidia.com/gpu", Allocatable: math.MaxInt64}}}},
		Pods: []admission.Pod{{Node: "n1", GPUs: map[string]int64{"nvidia.com/gpu": math.MaxInt64}},
			{Node: "n1", GPUs: map[string]int64{"nvidia.com/gpu": math.MaxInt64}}},
	}
	ObserveGate(cd, snap, admission.Plan(snap, admission.StrictFIFO), "")
	g.Expect(freeGPUs()[cd]).To(HaveKeyWithValue("nvidia.com/gpu", int64(math.MaxInt64)), "n1 has none free; n2 and n3 saturate")
	forgetGate(map[types.NamespacedName]bool{})
}
