// Package queueview answers, on demand, where a tenant's waiting workspaces
// stand in the queues they wait in: their cluster's GPU queue and their
// TenantQuotas' queues. Positions are never written to status, where each
// admission would rewrite every waiter's (Kueue's visibility API, for the
// same write storm); a tenant reads them with its own rights (Server),
// naming only its own namespace's workspaces and counting the others.
package queueview

import (
	"slices"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/admission"
	"github.com/apiaryhq/apiary/internal/workspace/lifecycle"
)

// Queue kinds.
const (
	ClusterQueue = "Cluster"
	QuotaQueue   = "TenantQuota"
)

// MaxNamed bounds the names of the reader's own workspaces ahead listed
// per queue.
const MaxNamed = 10

// Queue is a workspace's place in one queue.
type Queue struct {
	// Kind is Cluster (the GPU queue of a ClusterDeployment) or TenantQuota.
	Kind string `json:"kind"`
	// Name is the ClusterDeployment (namespace/name) or the TenantQuota.
	Name string `json:"name"`
	// Position is 1 for the head of the queue.
	Position int `json:"position"`
	// Length is how many wait in the queue.
	Length int `json:"length"`
	// AheadInNamespace names the reader's workspaces ahead (at most MaxNamed).
	AheadInNamespace []string `json:"aheadInNamespace,omitempty"`
	// AheadElsewhere counts the workspaces of other namespaces ahead.
	AheadElsewhere int `json:"aheadElsewhere"`
}

// Place is a waiting workspace and its places.
type Place struct {
	Name     string    `json:"name"`
	Reason   string    `json:"reason"`
	Priority int32     `json:"priority"`
	QueuedAt time.Time `json:"queuedAt"`
	Queues   []Queue   `json:"queues"`
}

// TenantQuota is a quota as Places needs it: its name and which namespaces
// it selects.
type TenantQuota struct {
	Name    string
	Selects func(namespace string) bool
}

// Places are the waiting workspaces of namespace ns, in the order of the
// queues, each with its place in its cluster's GPU queue (when it waits
// there) and in the queue of each quota that selects it (when it waits for
// quota). workspaces are every workspace the gate sees. One sort and one
// pass over the waiting, whatever the number of queues.
func Places(ns string, workspaces []*workspacesv1.WorkspaceDeployment, quotas []TenantQuota) []Place {
	type entry struct {
		w        *workspacesv1.WorkspaceDeployment
		priority int32
		queuedAt time.Time
		cluster  string // "" when not at the GPU gate
		quota    bool
	}
	var waiting []entry
	for _, w := range workspaces {
		if !lifecycle.ClaimsPlace(w) {
			continue
		}
		e := entry{w: w, priority: lifecycle.Priority(w), queuedAt: lifecycle.QueuedAt(w),
			quota: conditions.IsFalse(w, workspacesv1.QuotaReservedCondition)}
		if waitsForGPUs(w) {
			e.cluster = clusterOf(w)
		}
		waiting = append(waiting, e)
	}
	slices.SortFunc(waiting, func(a, b entry) int {
		return admission.QueueOrder(a.priority, a.queuedAt, string(a.w.UID), b.priority, b.queuedAt, string(b.w.UID))
	})
	selecting := map[string][]int{} // namespace → the quotas that select it
	quotasOf := func(namespace string) []int {
		idx, ok := selecting[namespace]
		if !ok {
			for i, q := range quotas {
				if q.Selects(namespace) {
					idx = append(idx, i)
				}
			}
			selecting[namespace] = idx
		}
		return idx
	}
	type tally struct {
		length, elsewhere int
		own               []string
	}
	clusters := map[string]*tally{}
	quotaTallies := make([]tally, len(quotas))
	// enter counts a workspace into a queue and returns its place there.
	enter := func(t *tally, kind, name string, w *workspacesv1.WorkspaceDeployment) Queue {
		q := Queue{Kind: kind, Name: name, Position: t.length + 1, AheadElsewhere: t.elsewhere}
		if w.Namespace == ns {
			q.AheadInNamespace = slices.Clone(t.own)
			if len(t.own) < MaxNamed {
				t.own = append(t.own, w.Name)
			}
		} else {
			t.elsewhere++
		}
		t.length++
		return q
	}
	var places []Place
	for _, e := range waiting {
		var queues []Queue
		if e.cluster != "" {
			t := clusters[e.cluster]
			if t == nil {
				t = &tally{}
				clusters[e.cluster] = t
			}
			queues = append(queues, enter(t, ClusterQueue, e.cluster, e.w))
		}
		if e.quota {
			for _, i := range quotasOf(e.w.Namespace) {
				queues = append(queues, enter(&quotaTallies[i], QuotaQueue, quotas[i].Name, e.w))
			}
		}
		if e.w.Namespace == ns {
			places = append(places, Place{Name: e.w.Name, Reason: conditions.GetReason(e.w, commonv1.ReadyCondition), Priority: e.priority,
				QueuedAt: e.queuedAt, Queues: queues})
		}
	}
	// The lengths are known once every waiter was counted.
	for i := range places {
		for j := range places[i].Queues {
			q := &places[i].Queues[j]
			if q.Kind == ClusterQueue {
				q.Length = clusters[q.Name].length
				continue
			}
			for k := range quotas {
				if quotas[k].Name == q.Name {
					q.Length = quotaTallies[k].length
				}
			}
		}
	}
	return places
}

// waitsForGPUs reports whether the GPU gate holds a workspace.
func waitsForGPUs(w *workspacesv1.WorkspaceDeployment) bool {
	if !conditions.IsFalse(w, workspacesv1.GPUCapacityCondition) {
		return false
	}
	switch conditions.GetReason(w, workspacesv1.GPUCapacityCondition) {
	case workspacesv1.WaitingForGPUCapacityReason, workspacesv1.GPUCapacityFragmentedReason, workspacesv1.WaitingBehindOlderReason:
		return true
	}
	return false
}

// clusterOf is the ClusterDeployment a workspace targets, namespace/name.
func clusterOf(w *workspacesv1.WorkspaceDeployment) string {
	ns := w.Spec.ClusterDeploymentRef.Namespace
	if ns == "" {
		ns = w.Namespace
	}
	return ns + "/" + w.Spec.ClusterDeploymentRef.Name
}
