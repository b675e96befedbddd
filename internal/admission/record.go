package admission

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/resources"
)

// What a workspace's admission record (status.admission) says of its GPUs,
// and whether it still covers what the workspace asks for, so that a
// request that does not grow keeps its GPUs without a look at the cluster.

func PlacementMessage(a *workspacesv1.WorkspaceAdmission) string {
	var nodes []string
	for _, p := range a.Placement {
		nodes = append(nodes, fmt.Sprintf("%s×%d", p.Node, p.Replicas))
	}
	return fmt.Sprintf("%d %s GPU(s) per replica for %d replica(s) reserved on %s", a.GPUsPerReplica, a.ResourceName, a.Replicas, strings.Join(nodes, ", "))
}

// SameGPUs reports whether an admission is for exactly this GPU request.
func SameGPUs(a *workspacesv1.WorkspaceAdmission, req *Request) bool {
	if req == nil {
		return a.GPUsPerReplica <= 0
	}
	return Keeps(a, req) && req.PerReplica == a.GPUsPerReplica && req.Replicas == a.Replicas
}

// Keeps reports whether an admission covers a request without a new
// look at the cluster: the same GPUs, or fewer of them per replica or fewer
// replicas on the same selector and resource, each in its old slot (a
// request that shrinks never waits).
func Keeps(a *workspacesv1.WorkspaceAdmission, req *Request) bool {
	if req == nil {
		return true
	}
	if a.GPUsPerReplica <= 0 || (req.Resource != "" && req.Resource != a.ResourceName) ||
		!equality.Semantic.DeepEqual(normSelector(req.Selector), normSelector(a.Selector)) {
		return false
	}
	return req.PerReplica <= a.GPUsPerReplica && req.Replicas <= a.Replicas
}

func normSelector(s map[string]string) map[string]string {
	if len(s) == 0 {
		return nil
	}
	return s
}

// TrimPlacement keeps the first replicas of a placement.
func TrimPlacement(p []workspacesv1.GPUPlacement, replicas int32) []workspacesv1.GPUPlacement {
	var out []workspacesv1.GPUPlacement
	for _, e := range p {
		if replicas <= 0 {
			break
		}
		n := min(e.Replicas, replicas)
		out = append(out, workspacesv1.GPUPlacement{Node: e.Node, Replicas: n})
		replicas -= n
	}
	return out
}

// SameCPUAndMemory reports whether an admission records the CPU and memory
// totals of a new record: the part of its quota charge beyond its GPUs
// (which SameGPUs compares).
func SameCPUAndMemory(a, rec *workspacesv1.WorkspaceAdmission) bool {
	return sameQuantity(a.CPU, rec.CPU) && sameQuantity(a.Memory, rec.Memory)
}

func sameQuantity(a, b *resource.Quantity) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Cmp(*b) == 0
}

// Recorded is the GPU request of an admission record. Its placement holds
// a slot for each of the first replicas, at most resources.DefaultLimits
// .Replicas (the API's bound): a record past it would otherwise size it.
func Recorded(a *workspacesv1.WorkspaceAdmission) *Admission {
	if a == nil || a.GPUsPerReplica <= 0 || a.Replicas <= 0 {
		return nil
	}
	out := &Admission{Request: Request{Selector: a.Selector, Resource: a.ResourceName,
		PerReplica: a.GPUsPerReplica, Replicas: a.Replicas}}
	slots := min(int(a.Replicas), int(resources.DefaultLimits.Replicas))
	for _, p := range a.Placement {
		for range min(max(int(p.Replicas), 0), slots-len(out.Placement)) {
			out.Placement = append(out.Placement, Slot{Node: p.Node, GPUs: a.GPUsPerReplica})
		}
	}
	return out
}

// PlacementRecord groups the slots of a placement by consecutive node.
func PlacementRecord(slots []Slot) []workspacesv1.GPUPlacement {
	var out []workspacesv1.GPUPlacement
	for _, s := range slots {
		if n := len(out); n > 0 && out[n-1].Node == s.Node {
			out[n-1].Replicas++
			continue
		}
		out = append(out, workspacesv1.GPUPlacement{Node: s.Node, Replicas: 1})
	}
	return out
}
