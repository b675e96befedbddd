package workspace

import (
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/apiaryhq/apiary/internal/wake"
)

// What a workspace waits for, and what wakes it. A step that stops to wait
// for something outside the workspace registers its topic on the run
// (workspaceRun.waitFor); the watch mapping named here fires the topic and
// wakes its waiters from memory (internal/wake), never by reading the
// waiter's status from the cache, which may not hold the wait yet. A safety
// net requeue bounds each wait besides, at the step.
//
// Waits that a mapping by the workspace's spec or by labels covers need no
// topic, as a spec in the cache is never older than the reconcile that read
// it: the class (workspacesOfClass, by spec.workspaceClassRef), the
// ClusterDeployment (workspacesOfCluster, by spec.clusterDeploymentRef), the
// valuesFrom objects (workspacesOfValues, by spec.valuesFrom, and a 30 s
// requeue) and the workspace's own ServiceSet (workspacesOfServiceSet, by
// its labels or ownerReferences, and a requeue at the deploy timeout).
const (
	// waitPrerequisites: a shared prerequisite install on the cluster (Key)
	// settles; fired by the events of the cluster's prerequisite ServiceSets.
	// No requeue: the ServiceSet's own events are the only way it changes.
	waitPrerequisites = "Prerequisites"
	// waitCapacity: GPUs free up on the cluster (Key); fired by the child's
	// node and pod events and by workspaces of the cluster that change
	// phase or go. Requeue: waitingResync.
	waitCapacity = "GPUCapacity"
	// waitStopped: a pod of the cluster (Key) appears or changes, which may
	// be one of a stopped workspace's workloads running again; fired by the
	// child's pod (and node) events. Requeue: stoppedResync.
	waitStopped = "StoppedPods"
	// waitChild: the child cluster (Key) can be reached; fired by events of
	// its kubeconfig Secret. Requeue: 30 s.
	waitChild = "ChildAccess"
	// waitQuota: room in a TenantQuota; fired when a quota's room grows, a
	// namespace's labels change (which quotas select it), and a workspace's
	// QuotaReserved condition changes or it goes (the queue of a quota moves).
	// Requeue: waitingResync.
	waitQuota = "QuotaRoom"
	// waitSync: Flux applies a commit; fired by Kustomization events, and
	// the Git sink's notices wake the committing workspace directly.
	// Requeue: none for the workspace's own objects, routeInfraResync for routes.
	waitSync = "FluxSync"
	// waitRoutes: the routing infrastructure of a cluster (Key: the
	// workspace's cluster, its regional cluster) changes: its tenant Gateway
	// or waypoint, or the regional ClusterDeployment; fired by Gateway
	// events of regional and child clusters and regional ClusterDeployment
	// events. Registered by every workspace whose routes the step manages,
	// ready or not, as a ready route follows the Gateway too. Requeue:
	// routeInfraResync or routeErrorResync.
	waitRoutes = "Routes"
	// waitPorts: a port of a regional cluster's pool frees up; fired when a
	// workspace goes. Requeue: routeInfraResync.
	waitPorts = "PoolPorts"
	// waitHosts: a host name of a regional cluster's tenant Gateway frees
	// up; fired when a workspace goes or its routes let go of a host name
	// (status.routes.hosts). Requeue: routeInfraResync.
	waitHosts = "HostNames"
	// waitHostRival: another workspace claims a host name (Key) the
	// workspace's routes hold, as shards racing for it may; fired when a
	// workspace's status.routes.hosts gains the host name. The younger
	// holder backs off. No requeue.
	waitHostRival = "HostNameRival"
	// waitShard: the shard that holds the workspace's cluster hands it
	// over; fired by the shards' Lease events. Requeue: the shard gate's.
	waitShard = "ShardHandOver"
	// waitPriorityClass: the workspace's WorkspacePriorityClass (Key: its
	// name) appears, changes or goes; fired by the class's events.
	// Registered by every workspace with a priority class, whatever it
	// waits for. Requeue: priorityClassResync while it does not exist.
	waitPriorityClass = "PriorityClass"
)

// clusterTopic is a topic of one ClusterDeployment.
func clusterTopic(kind string, cd types.NamespacedName) wake.Topic {
	return wake.Topic{Kind: kind, Key: cd.String()}
}

// waitFor registers what the run's workspace waits for.
func (w *workspaceRun) waitFor(topics ...wake.Topic) {
	w.waits = append(w.waits, topics...)
}

// wake fires topics and returns the requests of their waiters.
func (r *Reconciler) wake(topics ...wake.Topic) []reconcile.Request {
	var out []reconcile.Request
	seen := map[types.NamespacedName]bool{}
	for _, t := range topics {
		for _, k := range r.waits.Fire(t) {
			if !seen[k] {
				seen[k] = true
				out = append(out, reconcile.Request{NamespacedName: k})
			}
		}
	}
	return out
}
