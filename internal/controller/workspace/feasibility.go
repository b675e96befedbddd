package workspace

import (
	"context"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/admission"
	"github.com/apiaryhq/apiary/internal/workspace/request"
)

// feasibilityFor publishes whether the request (want) of a workspace
// without GPUs, asking for CPU, memory or storage, fits the child cluster's
// nodes and pods. It reads them from the cluster's cache when one is open
// for others (the GPU gate, stopped workspaces; lingering after them
// included) and opens none itself: a workspace without GPUs costs its
// child no list and no watch of Nodes or Pods, and without an open cache
// its verdict is not measured (Unknown). A workspace that asks for nothing
// fits without a look.
func (r *Reconciler) feasibilityFor(ctx context.Context, w *workspaceRun, want request.Request) {
	demand, replicas, what := want.Totals(), int32(want.Replicas), want.What()
	if demand.CPU.IsZero() && demand.Memory.IsZero() && demand.Storage.IsZero() {
		publishFeasibility(w, admission.Feasible(nil, nil, demand, replicas, nil, what), false, r.now())
		return
	}
	cc := r.Children.Running(w.cdKey)
	if cc == nil {
		feasibilityNotMeasured(w)
		return
	}
	nodes, errN := cc.ListNodes(ctx)
	pods, errP := cc.ListPods(ctx)
	if errN != nil || errP != nil {
		// Not open for nodes and pods (or stopped meanwhile).
		feasibilityNotMeasured(w)
		return
	}
	publishFeasibility(w, admission.Feasible(nodes, pods, demand, replicas, nil, what), true, r.now())
}

// feasibilityNotMeasured says no cache of the child was open to measure a
// workspace without GPUs with.
func feasibilityNotMeasured(w *workspaceRun) {
	conditions.MarkUnknown(w.obj, workspacesv1.FeasibleCondition, workspacesv1.FeasibilityNotMeasuredReason,
		"Not measured: a workspace without GPUs opens no watch of the nodes and pods of cluster %q, and none was open", w.cdKey.Name)
}

// feasibilityFromGate publishes the verdict on a workspace's request (want)
// from the snapshot and the decision of the gate.
func (r *Reconciler) feasibilityFromGate(w *workspaceRun, want request.Request, nodes []corev1.Node, pods []corev1.Pod, d *admission.Decision) {
	publishFeasibility(w, admission.Feasible(nodes, pods, want.Totals(), int32(want.Replicas), d, want.What()), true, r.now())
}

// publishFeasibility writes status.feasibility and the Feasible condition
// (the exalsius operator's, which its clients read) when the verdict
// changed: whether it fits, what is demanded or missing, the message.
// Available and evaluatedAt move only with it, so a workspace waiting while
// pods come and go on its cluster causes no write until its verdict moves.
func publishFeasibility(w *workspaceRun, f admission.Feasibility, measured bool, now time.Time) {
	obj := w.obj
	res := *w.resolved.DeepCopy()
	next := &workspacesv1.FeasibilityStatus{Fits: f.Fits, Message: f.Message,
		Demanded: toResourceTotals(f.Demanded, res)}
	if measured {
		next.Available = toResourceTotals(f.Available, res)
	}
	if f.Missing != nil {
		m := toResourceTotals(*f.Missing, res)
		next.Missing = &m
	}
	if prev := obj.Status.Feasibility; prev != nil {
		same := *next
		same.EvaluatedAt, same.Available = prev.EvaluatedAt, prev.Available
		if equality.Semantic.DeepEqual(*prev, same) && conditions.Has(obj, workspacesv1.FeasibleCondition) &&
			!conditions.IsUnknown(obj, workspacesv1.FeasibleCondition) {
			return
		}
	}
	next.EvaluatedAt = metav1.NewTime(now.Truncate(time.Second))
	obj.Status.Feasibility = next
	if f.Fits {
		conditions.MarkTrue(obj, workspacesv1.FeasibleCondition, workspacesv1.ResourcesAvailableReason, "%s", f.Message)
	} else {
		conditions.MarkFalse(obj, workspacesv1.FeasibleCondition, workspacesv1.InsufficientResourcesReason, "%s", f.Message)
	}
}

// feasibilityUnknown says the child cluster could not be read.
func feasibilityUnknown(obj *workspacesv1.WorkspaceDeployment, err error) {
	conditions.MarkUnknown(obj, workspacesv1.FeasibleCondition, workspacesv1.FeasibilityUnknownReason,
		"Could not reach the child cluster: %s", err)
}

func toResourceTotals(t admission.Totals, res workspacesv1.WorkspaceResourceSpec) workspacesv1.ResourceTotals {
	out := workspacesv1.ResourceTotals{GPUCount: int32(t.GPUs)}
	for _, q := range []struct {
		from resource.Quantity
		to   **resource.Quantity
	}{{t.CPU, &out.CPU}, {t.Memory, &out.Memory}, {t.Storage, &out.Storage}} {
		if !q.from.IsZero() {
			v := q.from.DeepCopy()
			*q.to = &v
		}
	}
	if pr := res.PerReplica; pr != nil {
		if pr.GPUVendor != nil {
			out.GPUVendor = string(*pr.GPUVendor)
		}
		if pr.GPUType != nil {
			out.GPUType = *pr.GPUType
		}
	}
	return out
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
