package workspace

import (
	"context"
	"sort"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/reconciler"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
)

// fail puts the workspace in Failed. The failure context of the first
// failure is kept while the workspace stays failed; a new failure after a
// recovery captures a new one. Failed stalls the workspace until its spec,
// its class or its cluster change.
func (r *Reconciler) fail(ctx context.Context, obj *workspacesv1.WorkspaceDeployment, reason, msg string) {
	wasFailed := obj.Status.Phase == workspacesv1.PhaseFailed && obj.Status.FailureContext != nil
	if !wasFailed {
		phase := obj.Status.Phase
		if phase == "" {
			phase = workspacesv1.PhasePending
		}
		fc := &workspacesv1.FailureContext{PhaseWhenFailed: phase, Reason: reason}
		fc.ServiceSetStatus = r.serviceSetSnapshot(ctx, obj)
		fc.RecentEvents = r.recentEvents(ctx, obj, reason, msg)
		obj.Status.FailureContext = fc
	}
	obj.Status.Phase = workspacesv1.PhaseFailed
	obj.Status.Message = msg
	conditions.MarkStalled(obj, reason, "%s", msg)
}

// serviceSetSnapshot records the workspace's ServiceSet, from the cache.
func (r *Reconciler) serviceSetSnapshot(ctx context.Context, obj *workspacesv1.WorkspaceDeployment) *workspacesv1.ServiceSetSnapshot {
	if obj.Status.Delivery == nil || obj.Status.Delivery.Inventory == nil {
		return nil // nothing was delivered yet: there is no ServiceSet
	}
	ss := &k0rdentv1beta1.ServiceSet{}
	key := client.ObjectKey{Namespace: plan.ClusterKey(obj).Namespace, Name: serviceSetName(obj)}
	if err := r.Get(ctx, key, ss); err != nil {
		return nil
	}
	snap := &workspacesv1.ServiceSetSnapshot{Name: ss.Name, Deployed: ss.Status.Deployed}
	for _, s := range ss.Status.Services {
		snap.Services = append(snap.Services, workspacesv1.ServiceSnapshot{Name: s.Name, State: s.State, FailureMessage: s.FailureMessage})
	}
	return snap
}

// recentEvents returns the failure being recorded followed by the newest
// events of the workspace, five at most. Events are read uncached, once per
// failure.
func (r *Reconciler) recentEvents(ctx context.Context, obj *workspacesv1.WorkspaceDeployment, reason, msg string) []workspacesv1.EventSnapshot {
	out := []workspacesv1.EventSnapshot{{LastSeen: metav1.Now(), Type: corev1.EventTypeWarning, Reason: reason, Message: reconciler.Truncate(msg, 1024)}}
	if r.APIReader == nil {
		return out
	}
	list := &corev1.EventList{}
	if err := r.APIReader.List(ctx, list, client.InNamespace(obj.Namespace),
		client.MatchingFields{"involvedObject.name": obj.Name, "involvedObject.kind": "WorkspaceDeployment"}); err != nil {
		return out
	}
	seen := func(e corev1.Event) metav1.Time {
		switch {
		case !e.LastTimestamp.IsZero():
			return e.LastTimestamp
		case e.Series != nil:
			return metav1.NewTime(e.Series.LastObservedTime.Time)
		default:
			return metav1.NewTime(e.EventTime.Time)
		}
	}
	sort.Slice(list.Items, func(i, j int) bool {
		a, b := seen(list.Items[i]), seen(list.Items[j])
		return b.Before(&a)
	})
	for _, e := range list.Items {
		if len(out) == 5 {
			break
		}
		out = append(out, workspacesv1.EventSnapshot{LastSeen: seen(e), Type: e.Type, Reason: e.Reason, Message: reconciler.Truncate(e.Message, 1024)})
	}
	return out
}
