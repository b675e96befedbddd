package workspace

import (
	"context"
	"fmt"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/admission"
	"github.com/apiaryhq/apiary/internal/childcluster"
	"github.com/apiaryhq/apiary/internal/gpu"
	"github.com/apiaryhq/apiary/internal/usage"
	"github.com/apiaryhq/apiary/internal/workspace/request"
)

// admit is the gate between resolving a workspace and delivering it: its
// GPUs must fit on the nodes of its cluster (internal/admission) and its
// request in every TenantQuota that selects its namespace
// (internal/quota). What passes is recorded in status.admission — written
// at once when GPUs were placed, before anything is delivered, so a restart
// recovers every placement before admitting anything new on the cluster. A
// request that neither grows its GPUs nor its quota charge keeps its
// admission without a look at the cluster.
func (r *Reconciler) admit(ctx context.Context, w *workspaceRun) (stepResult, error) {
	obj := w.obj
	if w.stopping != "" {
		// halt gives the admission back. The vendor found for it stays in
		// the values: the paused ServiceSet must be the one Helm installed.
		stampPreviousVendor(w)
		return proceed, nil
	}
	inForce := obj.Status.Admission
	if inForce != nil && inForce.Cluster != w.cdKey.String() {
		inForce = nil
	}
	// The request as the spec says it; a vendor the gate found before is
	// stamped again only when the admission it was found for is kept.
	want := request.Of(w.resolved)
	req := want.GPU()
	quotas, err := r.quotasOf(ctx, obj.Namespace)
	if err != nil {
		return stopWith(0), err
	}
	if obj.Status.Admission == nil && delivered(obj) {
		// Delivered before admissions were recorded: adopt what runs.
		inForce = r.adopted(w, want)
	}
	rec := &workspacesv1.WorkspaceAdmission{Cluster: w.cdKey.String(), AdmittedAt: r.admittedAt()}
	rec.CPU, rec.Memory = want.Total.CPU, want.Total.Memory
	if inForce != nil && admission.SameGPUs(inForce, req) && admission.SameCPUAndMemory(inForce, rec) {
		stampPreviousVendor(w)
		r.keepAdmission(w, inForce, req)
		if err := r.keepQuotas(ctx, w, quotas, false); err != nil {
			return stopWith(0), err
		}
		return proceed, nil
	}
	keep := inForce != nil && admission.Keeps(inForce, req)
	if keep {
		stampPreviousVendor(w)
	}

	unlock := func() {}
	defer func() { unlock() }()
	var decision admission.Decision
	switch {
	case req == nil:
		if inForce == nil {
			r.feasibilityFor(ctx, w, want) // before its first admission, as the exalsius operator does
		}
	case keep:
		rec.ResourceName, rec.Placement = inForce.ResourceName, admission.TrimPlacement(inForce.Placement, req.Replicas)
	default:
		cc, err := r.Children.Watch(ctx, w.cdKey, workspaceWatchOwner(obj), childcluster.WatchOptions{Nodes: true, Pods: true})
		if err != nil {
			conditions.MarkUnknown(obj, workspacesv1.GPUCapacityCondition, workspacesv1.ChildUnreachableReason, "%s", err)
			feasibilityUnknown(obj, err)
			pending(obj, "waiting for access to the child cluster: %s", err)
			w.waitFor(clusterTopic(waitChild, w.cdKey))
			return stopWith(30 * time.Second), nil
		}
		nodes, err := cc.ListNodes(ctx)
		if err != nil {
			return stopWith(0), fmt.Errorf("listing nodes of %s: %w", w.cdKey, err)
		}
		pods, err := cc.ListPods(ctx)
		if err != nil {
			return stopWith(0), fmt.Errorf("listing pods of %s: %w", w.cdKey, err)
		}
		unlock = r.gate.lock(w.cdKey)
		var read gateRead
		if decision, read, err = r.decideGPUs(ctx, w, req, nodes, pods); err != nil {
			return stopWith(0), err
		}
		stampVendor(w, decision.Vendor)
		r.feasibilityFromGate(w, want, nodes, pods, &decision)
		if decision.Outcome != admission.Admit {
			if res, preempting, err := r.preempt(ctx, w, req, read, decision); preempting || err != nil {
				return res, err
			}
			return r.gpuVerdict(ctx, w, req, decision), nil
		}
		rec.ResourceName, rec.Placement = decision.Resource, admission.PlacementRecord(decision.Placement)
	}
	if req != nil {
		rec.GPUsPerReplica, rec.Replicas, rec.Selector = req.PerReplica, req.Replicas, req.Selector
	}
	if res, err := r.reserveQuotas(ctx, w, quotas, rec); err != nil || res.stop {
		return res, err
	}
	usage.CountAdmission(&obj.Status, obj.Status.Admission, rec.AdmittedAt.Time)
	obj.Status.Admission = rec
	r.markAdmitted(w, rec, decision)
	if req == nil || keep {
		return proceed, nil
	}
	// The placement is written before anything is delivered for it, and
	// the gate holds it until the cache has the write.
	r.Children.Release(w.cdKey, workspaceWatchOwner(obj))
	obj.Status.Phase, obj.Status.Message = workspacesv1.PhaseDeploying, conditions.GetMessage(obj, workspacesv1.GPUCapacityCondition)
	// The vendor the gate found goes with the admission it was found for:
	// stampPreviousVendor reads it back from the status, and a reconcile
	// that sees this write (a cache a write behind, a restart before the
	// deploy) must render the same values, or the ServiceSet flips.
	obj.Status.ResolvedResources = w.resolved.DeepCopy()
	if err := w.persist(ctx); err != nil {
		return stopWith(0), fmt.Errorf("recording the admission: %w", err)
	}
	r.gate.assume(w.cdKey, obj.UID, rec, obj.ResourceVersion)
	return proceed, nil
}

// keepAdmission lets a workspace whose admission is its request proceed.
func (r *Reconciler) keepAdmission(w *workspaceRun, a *workspacesv1.WorkspaceAdmission, req *admission.Request) {
	obj := w.obj
	switch {
	case req == nil:
		conditions.Delete(obj, workspacesv1.GPUCapacityCondition)
	case !conditions.IsTrue(obj, workspacesv1.GPUCapacityCondition):
		conditions.MarkTrue(obj, workspacesv1.GPUCapacityCondition, workspacesv1.ResourcesAvailableReason, "%s", admission.PlacementMessage(a))
	}
	obj.Status.Admission = a
}

// adopted is the admission of a workspace delivered before Apiary recorded
// admissions: its request, of the resource its release was given (that of
// the vendor stamped on its status), placed where the gate now finds it.
func (r *Reconciler) adopted(w *workspaceRun, want request.Request) *workspacesv1.WorkspaceAdmission {
	a := &workspacesv1.WorkspaceAdmission{Cluster: w.cdKey.String(), AdmittedAt: r.admittedAt()}
	a.CPU, a.Memory = want.Total.CPU, want.Total.Memory
	if req := want.GPU(); req != nil {
		a.ResourceName, a.GPUsPerReplica, a.Replicas, a.Selector = req.Resource, req.PerReplica, req.Replicas, req.Selector
		if a.ResourceName == "" {
			a.ResourceName, _ = gpu.ResourceFor(previousVendor(w.obj))
		}
	}
	return a
}

// previousVendor is the GPU vendor stamped on a workspace's status.
func previousVendor(obj *workspacesv1.WorkspaceDeployment) string {
	if prev := obj.Status.ResolvedResources; prev != nil && prev.PerReplica != nil && prev.PerReplica.GPUVendor != nil {
		return string(*prev.PerReplica.GPUVendor)
	}
	return ""
}

// stampPreviousVendor keeps the vendor the gate found for the admission in force.
func stampPreviousVendor(w *workspaceRun) {
	if v := previousVendor(w.obj); v != "" {
		stampVendor(w, v)
	}
}

// markAdmitted sets the gate's conditions of an admitted request.
func (r *Reconciler) markAdmitted(w *workspaceRun, rec *workspacesv1.WorkspaceAdmission, d admission.Decision) {
	obj := w.obj
	if rec.GPUsPerReplica > 0 {
		msg := admission.PlacementMessage(rec)
		if d.Matching > 0 {
			msg = fmt.Sprintf("%s (%d of %d GPUs free on %d matching node(s))", msg, d.Free, d.Total, d.Matching)
		}
		conditions.MarkTrue(obj, workspacesv1.GPUCapacityCondition, workspacesv1.ResourcesAvailableReason, "%s", msg)
	} else {
		conditions.Delete(obj, workspacesv1.GPUCapacityCondition)
	}
}
