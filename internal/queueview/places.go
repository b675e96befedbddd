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

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
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
// quota). workspaces are every workspace the gate sees.
func Places(ns string, workspaces []*workspacesv1.WorkspaceDeployment, quotas []TenantQuota) []Place {
	var waiting []*workspacesv1.WorkspaceDeployment
	for _, w := range workspaces {
		if lifecycle.ClaimsPlace(w) {
			waiting = append(waiting, w)
		}
	}
	slices.SortFunc(waiting, func(a, b *workspacesv1.WorkspaceDeployment) int {
		switch {
		case lifecycle.QueuedBefore(a, b):
			return -1
		case lifecycle.QueuedBefore(b, a):
			return 1
		}
		return 0
	})
	var places []Place
	for _, w := range waiting {
		if w.Namespace != ns {
			continue
		}
		p := Place{Name: w.Name, Reason: conditions.GetReason(w, "Ready"), Priority: lifecycle.Priority(w), QueuedAt: lifecycle.QueuedAt(w)}
		if waitsForGPUs(w) {
			cluster := clusterOf(w)
			p.Queues = append(p.Queues, place(ClusterQueue, cluster, w, waiting, func(o *workspacesv1.WorkspaceDeployment) bool {
				return waitsForGPUs(o) && clusterOf(o) == cluster
			}))
		}
		if conditions.IsFalse(w, workspacesv1.QuotaReservedCondition) {
			for _, q := range quotas {
				if !q.Selects(w.Namespace) {
					continue
				}
				p.Queues = append(p.Queues, place(QuotaQueue, q.Name, w, waiting, func(o *workspacesv1.WorkspaceDeployment) bool {
					return conditions.IsFalse(o, workspacesv1.QuotaReservedCondition) && q.Selects(o.Namespace)
				}))
			}
		}
		places = append(places, p)
	}
	return places
}

// place is w's place among the waiting (in queue order) that are in a queue.
func place(kind, name string, w *workspacesv1.WorkspaceDeployment, waiting []*workspacesv1.WorkspaceDeployment,
	in func(*workspacesv1.WorkspaceDeployment) bool) Queue {
	q := Queue{Kind: kind, Name: name}
	ahead := true
	for _, o := range waiting {
		if !in(o) {
			continue
		}
		q.Length++
		if o.UID == w.UID {
			ahead = false
			q.Position = q.Length
			continue
		}
		if !ahead {
			continue
		}
		if o.Namespace == w.Namespace {
			if len(q.AheadInNamespace) < MaxNamed {
				q.AheadInNamespace = append(q.AheadInNamespace, o.Name)
			}
		} else {
			q.AheadElsewhere++
		}
	}
	return q
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
