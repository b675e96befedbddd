package workspace

import (
	"context"
	"fmt"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/fluxcd/pkg/runtime/jitter"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/admission"
	"github.com/apiaryhq/apiary/internal/controller/index"
	"github.com/apiaryhq/apiary/internal/gpu"
	"github.com/apiaryhq/apiary/internal/metrics"
	"github.com/apiaryhq/apiary/internal/workspace/lifecycle"
	"github.com/apiaryhq/apiary/internal/workspace/request"
)

// waitingResync bounds how long a Waiting workspace goes without a look, on
// top of the watches that wake it (node, pod, workspace and quota changes).
const waitingResync = time.Minute

// gateRead is what one decision of the gate read: the cluster's snapshot,
// and the workspaces in it by key (this manager's last writes of them
// where the cache is behind).
type gateRead struct {
	snap      admission.Snapshot
	workspace map[string]*workspacesv1.WorkspaceDeployment
}

// decideGPUs reads the child cluster's nodes and pods and plans the
// cluster's queue with the workspace's request in it. The caller holds the
// cluster's lock.
func (r *Reconciler) decideGPUs(ctx context.Context, w *workspaceRun, req *admission.Request, nodes []corev1.Node,
	pods []corev1.Pod) (admission.Decision, gateRead, error) {
	siblings, err := r.clusterWorkspaces(ctx, w.cdKey)
	if err != nil {
		return admission.Decision{}, gateRead{}, err
	}
	read := gateRead{snap: admission.Snapshot{Nodes: admission.NodesFrom(nodes)},
		workspace: make(map[string]*workspacesv1.WorkspaceDeployment, len(siblings)+1)}
	owners := map[string]string{}
	add := func(s *workspacesv1.WorkspaceDeployment) {
		key := client.ObjectKeyFromObject(s).String()
		owners[childNamespace(s.Name)] = key
		read.workspace[key] = s
		read.snap.Workspaces = append(read.snap.Workspaces, r.gateView(w, s, req))
	}
	self := false
	for i := range siblings {
		s := r.written.Latest(&siblings[i]) // a preemption this manager wrote
		if s.UID == w.obj.UID {
			s, self = w.obj, true
		}
		add(s)
	}
	if !self { // not in the cache yet
		add(w.obj)
	}
	read.snap.Pods = admission.PodsFrom(pods, func(ns string) string { return owners[ns] })
	key := client.ObjectKeyFromObject(w.obj).String()
	plan := admission.Plan(read.snap, r.Policy) // what Decide does, keeping the whole plan for the metrics
	metrics.ObserveGate(w.cdKey, read.snap, plan, key)
	return plan[key], read, nil
}

// gateView is how the gate sees one workspace of the cluster: its
// admission in force (a Failed workspace keeps it: its release still
// exists and may bind at any time), and its pending request: the
// candidate's own, or a Waiting sibling's, read from the resources stamped
// on its status.
func (r *Reconciler) gateView(w *workspaceRun, s *workspacesv1.WorkspaceDeployment, req *admission.Request) admission.Workspace {
	out := admission.Workspace{Key: client.ObjectKeyFromObject(s).String(), UID: string(s.UID), Created: lifecycle.QueuedAt(s),
		Priority: lifecycle.Priority(s), Leaving: leaving(s)}
	candidate := s.UID == w.obj.UID
	a := r.gate.admissionOf(w.cdKey, s)
	if a != nil && a.Cluster == w.cdKey.String() {
		out.Admitted, out.Since = admission.Recorded(a), a.AdmittedAt.Time
	}
	if a == nil && !candidate && delivered(s) && s.Status.ResolvedResources != nil {
		// Delivered before admissions were recorded (an upgrade, or another
		// controller): its request holds, placed first-fit.
		if g := request.Of(*s.Status.ResolvedResources).GPU(); g != nil {
			out.Admitted = &admission.Admission{Request: *g}
		}
	}
	switch {
	case candidate:
		out.Pending = req
	case lifecycle.ClaimsPlace(s):
		out.Pending = request.Of(*s.Status.ResolvedResources).GPU()
		out.QuotaBlocked = conditions.IsFalse(s, workspacesv1.QuotaReservedCondition)
	}
	return out
}

// leaving reports whether a workspace is giving its GPUs back: stopping,
// and not failed (a stop that failed, StopUnsupported, holds them).
func leaving(s *workspacesv1.WorkspaceDeployment) bool {
	return stopping(s) && s.Status.Phase != workspacesv1.PhaseFailed
}

// delivered reports whether objects were delivered for a workspace and run:
// a stopping or stopped workspace's workloads are scaled away.
func delivered(s *workspacesv1.WorkspaceDeployment) bool {
	return everDelivered(s) && !stopping(s)
}

// gpuVerdict turns a decision that is not Admit into the workspace's status.
func (r *Reconciler) gpuVerdict(ctx context.Context, w *workspaceRun, req *admission.Request, d admission.Decision) stepResult {
	obj := w.obj
	what := describeGPUs(req)
	switch d.Reason {
	case admission.NoOffering:
		msg := fmt.Sprintf("No GPU matching %s is available on cluster %q; choose a different cluster or GPU", what, w.cdKey.Name)
		return r.failGate(ctx, w, workspacesv1.GPUOfferingUnavailableReason, msg)
	case admission.ReplicaTooLarge:
		msg := fmt.Sprintf("Each replica asks for %d GPU(s), but no node matching %s on cluster %q has more than %d; choose fewer GPUs per replica, or another cluster",
			req.PerReplica, what, w.cdKey.Name, d.LargestNode)
		return r.failGate(ctx, w, workspacesv1.GPUReplicaTooLargeReason, msg)
	case admission.NeverFits:
		short := int64(req.Replicas) - d.Capacity
		msg := fmt.Sprintf("The workspace asks for %d replica(s) of %d GPU(s) each, but the %d node(s) matching %s on cluster %q "+
			"could hold at most %d such replica(s) even with nothing else on them (%d GPU(s) in all, at most %d on one node): "+
			"short by %d replica(s), %d GPU(s); choose fewer replicas or GPUs per replica, or another cluster, or add nodes and change the request",
			req.Replicas, req.PerReplica, d.Matching, what, w.cdKey.Name, d.Capacity, d.Total, d.LargestNode, short, short*req.PerReplica)
		return r.failGate(ctx, w, workspacesv1.GPURequestInfeasibleReason, msg)
	case admission.OverLimits:
		msg := fmt.Sprintf("The workspace asks for %d replica(s) of %d GPU(s) each, beyond what Apiary admits", req.Replicas, req.PerReplica)
		return r.failGate(ctx, w, workspacesv1.InvalidResourcesReason, msg)
	}
	// The messages say why the workspace waits, never what changes as the
	// queue moves (how many are free, who is ahead): one admission must
	// not rewrite every waiter's status. Its place in the queue is read on
	// demand (internal/queueview, apiary queue), what is free in
	// status.feasibility.
	reason, msg := workspacesv1.WaitingForGPUCapacityReason,
		fmt.Sprintf("Waiting for %d GPU(s) matching %s on cluster %q: too few are free (status.feasibility); `apiary queue` shows its place in the queue",
			req.Demand(), what, w.cdKey.Name)
	switch d.Reason {
	case admission.Fragmented:
		reason = workspacesv1.GPUCapacityFragmentedReason
		msg = fmt.Sprintf("Waiting for a node with %d free GPU(s) matching %s on cluster %q for each of %d replica(s): enough are free in all, not on one node (status.feasibility)",
			req.PerReplica, what, w.cdKey.Name, req.Replicas)
	case admission.Queued:
		reason = workspacesv1.WaitingBehindOlderReason
		msg = fmt.Sprintf("Waiting behind workspace(s) ahead in the queue (of a higher priority, or older) requesting GPUs on the same nodes of cluster %q; %s",
			w.cdKey.Name, queuePlaceHint)
	}
	conditions.MarkFalse(obj, workspacesv1.GPUCapacityCondition, reason, "%s", msg)
	conditions.Delete(obj, workspacesv1.QuotaReservedCondition)
	waiting(w, msg)
	w.waitFor(clusterTopic(waitCapacity, w.cdKey))
	return stopWith(jitter.JitteredIntervalDuration(waitingResync))
}

func (r *Reconciler) failGate(ctx context.Context, w *workspaceRun, reason, msg string) stepResult {
	conditions.MarkFalse(w.obj, workspacesv1.GPUCapacityCondition, reason, "%s", msg)
	r.fail(ctx, w.obj, reason, msg)
	r.Children.Release(w.cdKey, workspaceWatchOwner(w.obj))
	return stopWith(0)
}

// waiting puts the workspace in Waiting, its resolved resources on its
// status so the gate can read its request while it waits.
func waiting(w *workspaceRun, msg string) {
	w.obj.Status.ResolvedResources = w.resolved.DeepCopy()
	w.obj.Status.Phase, w.obj.Status.Message = workspacesv1.PhaseWaiting, msg
}

// stampVendor records the vendor the gate found when the workspace left it unset.
func stampVendor(w *workspaceRun, vendor string) {
	pr := w.resolved.PerReplica
	if pr == nil || pr.GPUVendor != nil || vendor == "" {
		return
	}
	v := workspacesv1.GPUVendor(vendor)
	pr.GPUVendor = &v
}

// clusterWorkspaces lists the workspaces targeting a cluster, from the cache.
func (r *Reconciler) clusterWorkspaces(ctx context.Context, cd types.NamespacedName) ([]workspacesv1.WorkspaceDeployment, error) {
	list := &workspacesv1.WorkspaceDeploymentList{}
	if err := r.List(ctx, list, client.MatchingFields{index.WorkspaceCluster: cd.String()}); err != nil {
		return nil, fmt.Errorf("listing workspaces of cluster %s: %w", cd, err)
	}
	return list.Items, nil
}

// describeGPUs names what a request matches: its selector, and the vendor
// when the request pins one (its resource).
func describeGPUs(req *admission.Request) string {
	vendor := ""
	switch req.Resource {
	case gpu.ResourceNVIDIA:
		vendor = gpu.VendorNVIDIA
	case gpu.ResourceAMD:
		vendor = gpu.VendorAMD
	case "":
	default:
		vendor = req.Resource
	}
	sel := req.Selector
	if len(sel) == 0 {
		if vendor == "" {
			return "any GPU"
		}
		return fmt.Sprintf("any %s GPU", vendor)
	}
	out := fmt.Sprintf("selector %v", sel)
	if m, ok := sel[gpu.ModelLabel]; ok && len(sel) == 1 {
		out = fmt.Sprintf("model %q", m)
	}
	if vendor != "" {
		out += " (" + vendor + ")"
	}
	return out
}

// admittedAt is the time of an admission made now, on the reconciler's clock.
func (r *Reconciler) admittedAt() metav1.Time { return metav1.NewTime(r.now().Truncate(time.Second)) }

// queuePlaceHint ends the message of a workspace waiting behind others.
const queuePlaceHint = "`apiary queue` shows its place in the queue"
