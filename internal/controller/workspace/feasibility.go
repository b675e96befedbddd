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
	"github.com/apiaryhq/apiary/internal/childcluster"
	"github.com/apiaryhq/apiary/internal/workspace/request"
)

// feasibilityFor reads the child cluster's nodes and pods for a workspace
// without GPUs whose request (want) asks for CPU, memory or storage, and
// publishes whether they fit. A workspace that asks for nothing fits
// without a look.
func (r *Reconciler) feasibilityFor(ctx context.Context, w *workspaceRun, want request.Request) {
	demand, replicas, what := want.Totals(), int32(want.Replicas), want.What()
	if demand.CPU.IsZero() && demand.Memory.IsZero() && demand.Storage.IsZero() {
		publishFeasibility(w, admission.Feasible(nil, nil, demand, replicas, nil, what), false, r.now())
		return
	}
	owner := workspaceWatchOwner(w.obj) + "/feasibility"
	cc, err := r.Children.Watch(ctx, w.cdKey, owner, childcluster.WatchOptions{Pods: true})
	if err != nil {
		feasibilityUnknown(w.obj, err)
		return
	}
	defer r.Children.Release(w.cdKey, owner)
	nodes, errN := cc.ListNodes(ctx)
	pods, errP := cc.ListPods(ctx)
	if errN != nil || errP != nil {
		feasibilityUnknown(w.obj, firstErr(errN, errP))
		return
	}
	publishFeasibility(w, admission.Feasible(nodes, pods, demand, replicas, nil, what), true, r.now())
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
