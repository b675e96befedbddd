// Package admission decides which workspaces may take GPUs on a cluster, as
// the scheduler will see them: every replica of a request must fit on one
// matching, schedulable node, after what bound pods use and what earlier
// admissions still reserve. Reservations are placed on nodes, so any two
// requests whose selectors share a node see each other's; the workspaces that
// wait are served first come, first served (creation time, then UID) under a
// named queueing policy. A workspace may carry a priority: a higher one is
// served first, and first come, first served orders the workspaces of one
// priority (QueueOrder).
//
// A decision is a pure function of a Snapshot: the cluster's nodes, its bound
// pods and the workspaces that target it with their admissions in force and
// their pending requests. A decision depends on its snapshot alone, so a
// process that restarts and rebuilds the snapshot from the workspaces'
// status decides exactly as before, and the order of the snapshot's slices
// never matters. What a caller wrote and its cache does not show yet is
// its to remember (Assumptions, assume.go).
//
// Placement is first-fit: nodes are tried in name order and each replica
// takes the first node with room for it. Planning the whole queue in order
// makes decisions stable: a request later in the queue ("younger": of a
// lower priority, or as high and newer) is placed after the ones ahead of
// it that fit, so admitting it never makes one ahead that fitted wait, and
// it never changes the decision on one ahead (both are properties tested
// on random sequences with random priorities, see property_test.go).
package admission

import (
	"cmp"
	"fmt"
	"sort"
	"time"

	"github.com/apiaryhq/apiary/internal/resources"
)

// Policy orders the workspaces that wait for GPUs on a cluster.
type Policy string

const (
	// StrictFIFO lets no workspace overtake an older one that waits for
	// GPUs on a node it could also use: a large request at the head of the
	// queue blocks the smaller ones behind it until it fits. This is the
	// exalsius operator's head-of-line blocking, extended from identical
	// selectors to selectors that share a node, and Apiary's default.
	StrictFIFO Policy = "StrictFIFO"
	// BestEffortFIFO still serves the oldest first, but a younger request
	// that fits once every older request that fits is placed goes ahead of
	// an older one that does not fit (Kueue's BestEffortFIFO). A large
	// request may then wait for as long as smaller ones keep arriving.
	BestEffortFIFO Policy = "BestEffortFIFO"
)

// Validate reports an unknown policy.
func (p Policy) Validate() error {
	switch p {
	case StrictFIFO, BestEffortFIFO:
		return nil
	}
	return fmt.Errorf("unknown GPU queueing policy %q (want %s or %s)", p, StrictFIFO, BestEffortFIFO)
}

// GPU is one extended GPU resource a node offers.
type GPU struct {
	// Resource is the extended resource, nvidia.com/gpu or amd.com/gpu.
	Resource string
	// Vendor is the vendor of the resource on this node.
	Vendor string
	// Allocatable is the node's allocatable amount.
	Allocatable int64
}

// Node is a node of the cluster as the gate sees it.
type Node struct {
	Name   string
	Labels map[string]string
	// Schedulable is false for cordoned or not-ready nodes: they take no
	// new placement, but what is bound to them still counts.
	Schedulable bool
	// GPUs are the GPU resources the node offers, in the order a node that
	// offers several is examined (NVIDIA first).
	GPUs []GPU
}

// Pod is what one bound, not terminated pod uses of the GPUs of its node.
type Pod struct {
	Node string
	// Workspace is the key of the workspace the pod belongs to; empty for
	// any other pod.
	Workspace string
	// GPUs is the pod's request per extended resource.
	GPUs map[string]int64
}

// Request is a workspace's GPU demand.
type Request struct {
	// Selector is the exact-match node selector of the GPUs (gpuType and
	// gpuNodeSelector); nil matches every GPU node.
	Selector map[string]string
	// Resource is the extended resource; empty lets the nodes decide (that
	// of the first matching node by name).
	Resource string
	// PerReplica is the number of GPUs each replica takes.
	PerReplica int64
	// Replicas is the number of replicas, each placed on one node.
	Replicas int32
}

// Demand is the number of GPUs of all replicas: never negative, and
// math.MaxInt64 when the product would be more (resources.GPUDemand).
func (r Request) Demand() int64 { return resources.GPUDemand(r.PerReplica, int64(r.Replicas)) }

// Slot reserves the GPUs of one replica on a node.
type Slot struct {
	Node string
	GPUs int64
}

// Admission is a request that passed the gate, with its placement. A
// placement of fewer slots than replicas (none for an admission recovered
// from a workspace that Apiary did not admit itself) is completed first-fit.
type Admission struct {
	Request   Request
	Placement []Slot
}

// Workspace is one workspace that targets the cluster.
type Workspace struct {
	// Key identifies the workspace, as namespace/name.
	Key string
	UID string
	// Created is when the workspace queued: its creation, or the start
	// after a stop.
	Created time.Time
	// Priority is the workspace's priority (WorkspacePriorityClass); 0
	// without one.
	Priority int32
	// Admitted is the admission in force, nil when none. It keeps its
	// reservation while a changed request waits.
	Admitted *Admission
	// Pending is a request at the gate, nil when none.
	Pending *Request
	// QuotaBlocked marks a pending request that waits for a tenant quota:
	// it holds no place in the cluster's queue.
	QuotaBlocked bool
	// Leaving marks a workspace that is stopping: what it holds is being
	// given back, and a preemption (Preempt) counts it freed.
	Leaving bool
	// Since is when its admission in force was made: the younger is
	// preempted first among workspaces of one priority.
	Since time.Time
}

// before orders workspaces by QueueOrder, then by key.
func (w *Workspace) before(o *Workspace) bool {
	if c := QueueOrder(w.Priority, w.Created, w.UID, o.Priority, o.Created, o.UID); c != 0 {
		return c < 0
	}
	return w.Key < o.Key
}

// QueueOrder is the order of every queue of Apiary's, for GPUs on a cluster
// and for room in a TenantQuota: the higher priority first, then first
// come, first served (the time queued, then the UID). It returns a negative
// number when a comes first, a positive one when b does, 0 when neither.
func QueueOrder(pa int32, qa time.Time, uidA string, pb int32, qb time.Time, uidB string) int {
	switch {
	case pa != pb:
		return cmp.Compare(pb, pa)
	case !qa.Equal(qb):
		return qa.Compare(qb)
	}
	return cmp.Compare(uidA, uidB)
}

// Snapshot is what the gate knows of one cluster.
type Snapshot struct {
	Nodes      []Node
	Pods       []Pod
	Workspaces []Workspace
}

// Outcome is what a decision says a workspace does.
type Outcome string

// Outcomes.
const (
	Admit Outcome = "Admit"
	Wait  Outcome = "Wait"
	Fail  Outcome = "Fail"
)

// Reason says why.
type Reason string

// Reasons of decisions.
const (
	// Fits: every replica has a node (Admit).
	Fits Reason = "Fits"
	// Insufficient: the matching nodes have fewer free GPUs in all than the request (Wait).
	Insufficient Reason = "Insufficient"
	// Fragmented: enough GPUs are free in all, but not on nodes that can each hold a replica (Wait).
	Fragmented Reason = "Fragmented"
	// Queued: an older request waits for GPUs on a node this one could use (Wait, StrictFIFO).
	Queued Reason = "Queued"
	// NoOffering: no schedulable node matches the selector with a GPU of the resource (Fail).
	NoOffering Reason = "NoOffering"
	// ReplicaTooLarge: every matching node has fewer GPUs than one replica takes (Fail).
	ReplicaTooLarge Reason = "ReplicaTooLarge"
	// NeverFits: the matching nodes together cannot hold every replica even
	// with nothing else on them (Fail): the request is infeasible, not
	// waiting. Decision.Capacity says how many replicas they could hold.
	// It takes no place in the queue, so it blocks no younger request.
	NeverFits Reason = "NeverFits"
	// OverLimits: more replicas, or more GPUs per replica, than
	// resources.Default accepts (Fail). The API refuses such a request;
	// the gate refuses it again rather than loop over its replicas.
	OverLimits Reason = "OverLimits"
	// NotRequested: the workspace has no pending request and no admission.
	NotRequested Reason = "NotRequested"
)

// Decision is the gate's verdict on one workspace.
type Decision struct {
	Outcome Outcome
	Reason  Reason
	// Resource and Vendor are the GPU resource the request was matched
	// against and the vendor of the first matching node.
	Resource, Vendor string
	// Placement is where the replicas go (Admit), or where the admission in
	// force of a workspace without a pending request holds them.
	Placement []Slot
	// Reserved is where the admission in force holds the replicas that no
	// bound pod accounts for yet.
	Reserved []Slot
	// Matching is the number of schedulable nodes matching the request
	// with its resource; Total their allocatable GPUs.
	Matching int
	Total    int64
	// LargestNode is the most GPUs one matching node offers.
	LargestNode int64
	// Free is what the matching nodes have free for this request, after
	// bound pods, admissions in force and the older requests placed ahead
	// of it; Largest is the most free on one node.
	Free, Largest int64
	// Capacity is the most replicas of the request the schedulable
	// matching nodes could hold with nothing else on them: the sum, over
	// those nodes, of allocatable GPUs divided by a replica's GPUs (set
	// when the request was examined for feasibility).
	Capacity int64
	// Ahead are the workspaces ahead in the queue (of a higher priority,
	// or older) that this one waits behind (Queued).
	Ahead []string
	// Room is whether every replica would find a node now: always for
	// Admit, and for Queued when only the older requests hold it back.
	Room bool
}

// Decide returns the decision on the workspace with the given key: the
// cluster's whole queue is planned in order and the workspace's entry is
// returned. A workspace with an admission in force and no pending request
// is reported admitted with its effective placement.
func Decide(s Snapshot, key string, policy Policy) Decision {
	return Plan(s, policy)[key]
}

// Plan decides every workspace of the snapshot at once.
func Plan(s Snapshot, policy Policy) map[string]Decision {
	p := newPlanner(s)
	out := make(map[string]Decision, len(p.workspaces))
	p.reserveAdmitted(out)
	p.queue(policy, out)
	for _, w := range p.workspaces {
		if _, ok := out[w.Key]; !ok {
			out[w.Key] = Decision{Outcome: Wait, Reason: NotRequested}
		}
	}
	return out
}

// sortedWorkspaces returns the workspaces in queue order.
func sortedWorkspaces(ws []Workspace) []*Workspace {
	out := make([]*Workspace, len(ws))
	for i := range ws {
		out[i] = &ws[i]
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].before(out[j]) })
	return out
}
