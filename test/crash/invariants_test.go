package crash_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// invariants watches a namespace for what must hold at every moment, not
// only at the end: GPUs admitted per node of a cluster never exceed the
// node, no workspace is ever Failed or loses its admission (but one that
// stops, status.lifecycle.stopRequestedAt set, gives it back), and no
// ServiceSet or ClusterDeployment name is ever held by two objects one
// after the other (deleted and re-created, or duplicated).
type invariants struct {
	mu sync.Mutex
	// capacity is the GPUs of each child node; every cluster of the test
	// reaches the same child, and each plans its nodes on its own.
	capacity map[string]int64
	// placement is the GPUs admitted per workspace, by "cluster node".
	placement map[string]map[string]int64
	peak      map[string]int64
	// uids are the objects seen per "Kind name".
	uids map[string][]types.UID
	// deleted are the "Kind name"s seen going.
	deleted map[string]bool
	// specs are the successive specs of each "Kind name".
	specs map[string][]string
	// admitted are the workspaces seen with an admission.
	admitted   map[string]bool
	events     int
	violations []string
}

// watchInvariants starts the watches of a namespace.
func watchInvariants(t testing.TB, ns string, capacity map[string]int64) *invariants {
	t.Helper()
	inv := &invariants{capacity: capacity, placement: map[string]map[string]int64{}, peak: map[string]int64{},
		uids: map[string][]types.UID{}, deleted: map[string]bool{}, admitted: map[string]bool{}, specs: map[string][]string{}}
	follow(t, &workspacesv1.WorkspaceDeploymentList{}, ns, func(typ watch.EventType, o client.Object) {
		if ws, ok := o.(*workspacesv1.WorkspaceDeployment); ok {
			inv.workspace(typ, ws)
		}
	})
	follow(t, &k0rdentv1beta1.ServiceSetList{}, ns, func(typ watch.EventType, o client.Object) { inv.object("ServiceSet", typ, o) })
	follow(t, &k0rdentv1beta1.ClusterDeploymentList{}, ns, func(typ watch.EventType, o client.Object) {
		inv.object("ClusterDeployment", typ, o)
	})
	return inv
}

func (inv *invariants) violate(format string, args ...any) {
	if len(inv.violations) < 20 {
		inv.violations = append(inv.violations, fmt.Sprintf("event %d: ", inv.events)+fmt.Sprintf(format, args...))
	}
}

func (inv *invariants) workspace(typ watch.EventType, ws *workspacesv1.WorkspaceDeployment) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	inv.events++
	if ws.Status.Phase == workspacesv1.PhaseFailed {
		inv.violate("workspace %s Failed: %s", ws.Name, ws.Status.Message)
	}
	delete(inv.placement, ws.Name)
	switch {
	case ws.Status.Admission != nil:
		inv.admitted[ws.Name] = true
	case inv.admitted[ws.Name] && stopRequested(ws):
		inv.admitted[ws.Name] = false // a stop gives the admission back
	case inv.admitted[ws.Name] && typ != watch.Deleted && ws.DeletionTimestamp.IsZero():
		inv.violate("workspace %s lost its admission (phase %s: %s)", ws.Name, ws.Status.Phase, ws.Status.Message)
		inv.admitted[ws.Name] = false
	}
	if a := ws.Status.Admission; typ != watch.Deleted && a != nil {
		p := map[string]int64{}
		for _, s := range a.Placement {
			p[a.Cluster+" "+s.Node] += int64(s.Replicas) * a.GPUsPerReplica
		}
		inv.placement[ws.Name] = p
	}
	used := map[string]int64{}
	for _, p := range inv.placement {
		for key, n := range p {
			used[key] += n
		}
	}
	for key, n := range used {
		inv.peak[key] = max(inv.peak[key], n)
		var cluster, node string
		_, _ = fmt.Sscan(key, &cluster, &node)
		if n > inv.capacity[node] {
			inv.violate("%d GPUs admitted on node %s of cluster %s, which has %d", n, node, cluster, inv.capacity[node])
		}
	}
}

// stopRequested reports whether a workspace began to stop and has not
// started again.
func stopRequested(ws *workspacesv1.WorkspaceDeployment) bool {
	return ws.Status.Lifecycle != nil && ws.Status.Lifecycle.StopRequestedAt != nil
}

func (inv *invariants) object(kind string, typ watch.EventType, o client.Object) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	inv.events++
	key := kind + " " + o.GetName()
	if typ == watch.Deleted {
		inv.deleted[key] = true
		return
	}
	inv.spec(key, o)
	seen := inv.uids[key]
	for _, uid := range seen {
		if uid == o.GetUID() {
			return
		}
	}
	inv.uids[key] = append(seen, o.GetUID())
	if len(seen) > 0 {
		inv.violate("%s was created again (UIDs %v, then %s)", key, seen, o.GetUID())
	}
}

// spec records the spec of a ServiceSet or ClusterDeployment when it is
// one not seen before.
func (inv *invariants) spec(key string, o client.Object) {
	var spec any
	switch obj := o.(type) {
	case *k0rdentv1beta1.ServiceSet:
		spec = obj.Spec
	case *k0rdentv1beta1.ClusterDeployment:
		spec = obj.Spec
	default:
		return
	}
	data, err := json.Marshal(spec)
	if err != nil {
		inv.violate("%s: %v", key, err)
		return
	}
	if specs := inv.specs[key]; len(specs) == 0 || specs[len(specs)-1] != string(data) {
		inv.specs[key] = append(specs, string(data))
	}
}

// Specs are the successive specs seen of an object of kind and name.
func (inv *invariants) Specs(kind, name string) []string {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	return append([]string(nil), inv.specs[kind+" "+name]...)
}

// Violations returns what went wrong so far.
func (inv *invariants) Violations() []string {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	return append([]string(nil), inv.violations...)
}

// Figures are the events watched, the objects seen and the peak GPUs
// admitted per node of a cluster.
func (inv *invariants) Figures() (events, objects int, peak string) {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	keys := make([]string, 0, len(inv.peak))
	for k := range inv.peak {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	top := int64(0)
	for _, k := range keys {
		top = max(top, inv.peak[k])
	}
	return inv.events, len(inv.uids), fmt.Sprintf("%d of %d GPUs on the fullest node", top, maxCapacity(inv.capacity))
}

// Deleted reports whether an object of kind and name was seen going.
func (inv *invariants) Deleted(kind, name string) bool {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	return inv.deleted[kind+" "+name]
}

// UID is the first UID seen of an object, empty when none was.
func (inv *invariants) UID(kind, name string) types.UID {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	if u := inv.uids[kind+" "+name]; len(u) > 0 {
		return u[0]
	}
	return ""
}

func maxCapacity(c map[string]int64) int64 {
	var m int64
	for _, n := range c {
		m = max(m, n)
	}
	return m
}
