package metrics

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/apiaryhq/apiary/internal/admission"
	"github.com/apiaryhq/apiary/internal/resources"
)

// gateFree holds, per cluster and GPU resource, the free GPUs the GPU gate
// computed at its last decision on the cluster.
var (
	gateFreeMu sync.Mutex
	gateFree   = map[types.NamespacedName]map[string]int64{}
)

// ObserveGate records the free GPUs of a cluster the GPU gate just planned
// (plan is admission.Plan of snap) for the workspace candidate: per GPU
// resource of the cluster's nodes, what schedulable nodes offer minus what
// bound pods request, what admissions in force hold beyond their bound pods
// and what the candidate takes when it is admitted now, never below zero on
// a node.
func ObserveGate(cluster types.NamespacedName, snap admission.Snapshot, plan map[string]admission.Decision, candidate string) {
	used := map[string]map[string]int64{} // node -> resource -> GPUs
	take := func(node, resource string, n int64) {
		if node == "" || n <= 0 {
			return
		}
		if used[node] == nil {
			used[node] = map[string]int64{}
		}
		used[node][resource] = resources.SatAdd(used[node][resource], n)
	}
	for _, p := range snap.Pods {
		for r, n := range p.GPUs {
			take(p.Node, r, n)
		}
	}
	for key, d := range plan {
		for _, s := range d.Reserved {
			take(s.Node, d.Resource, s.GPUs)
		}
		if key == candidate && d.Outcome == admission.Admit {
			for _, s := range d.Placement {
				take(s.Node, d.Resource, s.GPUs)
			}
		}
	}
	free := map[string]int64{}
	seen := map[string]bool{}
	for _, n := range snap.Nodes {
		if seen[n.Name] {
			continue // a name is one node; the first entry wins, as for the gate
		}
		seen[n.Name] = true
		counted := map[string]bool{}
		for _, g := range n.GPUs {
			if counted[g.Resource] {
				continue
			}
			counted[g.Resource] = true
			if _, ok := free[g.Resource]; !ok {
				free[g.Resource] = 0 // the resource is offered: export it, if only as 0
			}
			if n.Schedulable {
				free[g.Resource] = resources.SatAdd(free[g.Resource], max(0, resources.SatSub(g.Allocatable, used[n.Name][g.Resource])))
			}
		}
	}
	gateFreeMu.Lock()
	gateFree[cluster] = free
	gateFreeMu.Unlock()
}

// freeGPUs returns a copy of what ObserveGate recorded.
func freeGPUs() map[types.NamespacedName]map[string]int64 {
	gateFreeMu.Lock()
	defer gateFreeMu.Unlock()
	out := make(map[types.NamespacedName]map[string]int64, len(gateFree))
	for k, v := range gateFree {
		out[k] = v // never modified after it is stored
	}
	return out
}

// forgetGate drops the free GPUs of clusters no workspace targets anymore.
func forgetGate(keep map[types.NamespacedName]bool) {
	gateFreeMu.Lock()
	defer gateFreeMu.Unlock()
	for k := range gateFree {
		if !keep[k] {
			delete(gateFree, k)
		}
	}
}
