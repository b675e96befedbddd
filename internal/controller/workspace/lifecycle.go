package workspace

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/delivery/flux"
	"github.com/apiaryhq/apiary/internal/metrics"
	"github.com/apiaryhq/apiary/internal/workspace/lifecycle"
)

// ActivityReader reads workspaces' last activity (lifecycle.ActivityReader).
type ActivityReader = lifecycle.ActivityReader

// fluxManagedLabel and fluxNamespaceLabel name the Kustomization that
// Flux's kustomize-controller applied an object with; deleting an object
// it applies would only make Flux create it again. A tenant can set both on
// its own workspace, so they are believed only when that Kustomization's
// inventory lists the workspace (appliedByFlux).
const (
	fluxManagedLabel   = "kustomize.toolkit.fluxcd.io/name"
	fluxNamespaceLabel = "kustomize.toolkit.fluxcd.io/namespace"
)

// now is the time on the reconciler's clock, the one every decision reads:
// expiry, culling, the start queue, admissions and quota charges.
func (r *Reconciler) now() time.Time {
	if r.Clock != nil {
		return r.Clock.Now()
	}
	return time.Now()
}

// lifecycleOf is the class's lifecycle; nil without a class or without one.
func lifecycleOf(w *workspaceRun) *workspacesv1.ClassLifecycle {
	if w.class == nil {
		return nil
	}
	return w.class.Spec.Lifecycle
}

// lifecycle decides whether the workspace runs, stops or expires (package
// lifecycle), and culls it when its class's idle policy says it is idle.
// It reads nothing for a workspace without a lifecycle of its own or its
// class's. A workspace to stop is stopped by halt, after its ServiceSet is
// delivered paused; one that stopped before stops here, frozen: nothing is
// resolved or delivered for it until it starts.
func (r *Reconciler) lifecycle(ctx context.Context, w *workspaceRun) (stepResult, error) {
	obj, classLC := w.obj, lifecycleOf(w)
	if obj.Spec.Lifecycle == nil && classLC == nil && obj.Status.Lifecycle == nil {
		return proceed, nil
	}
	now := r.now()
	v := lifecycle.Decide(lifecycle.Input{Now: now, Created: obj.CreationTimestamp.Time, Spec: obj.Spec.Lifecycle, Class: classLC})
	r.markExpiry(obj, v, classLC)
	if !v.Next.IsZero() {
		w.retry = sooner(w.retry, v.Next.Sub(now)+time.Second)
	}
	switch v.Action {
	case lifecycle.Delete:
		return r.expireDelete(ctx, w)
	case lifecycle.Stop:
		return r.beginStop(ctx, w, v.Reason, now)
	}
	if preempted(obj) && obj.Status.Lifecycle.StoppedAt == nil {
		return r.stopPreempted(ctx, w, now)
	}
	if stopping(obj) && obj.Spec.Suspend {
		// Starting delivers: a suspended workspace stays stopped.
		return r.beginStop(ctx, w, obj.Status.Lifecycle.StopReason, now)
	}
	if stopping(obj) {
		if err := r.beginStart(ctx, w, now); err != nil {
			return stopWith(0), err
		}
		return proceed, nil
	}
	return r.cullIdle(ctx, w, now)
}

// preempted reports whether a workspace is stopping, or stopped, for a
// preemption (preempt.go), and has not started again.
func preempted(obj *workspacesv1.WorkspaceDeployment) bool {
	return stopping(obj) && obj.Status.Lifecycle.StopReason == workspacesv1.StopPreempted
}

// stopPreempted carries on the stop a preemptor wrote onto the workspace.
// Under its class's afterPreemption Stay it first sets
// spec.lifecycle.stopped, as idle culling does, so that starting it again
// is its user's; otherwise, once stopped, it starts again on its own
// (beginStart), from the place its preemption recorded
// (lifecycle.QueuedAt).
func (r *Reconciler) stopPreempted(ctx context.Context, w *workspaceRun, now time.Time) (stepResult, error) {
	obj, classLC := w.obj, lifecycleOf(w)
	if classLC != nil && classLC.AfterPreemption == workspacesv1.PreemptedStay && (obj.Spec.Lifecycle == nil || !obj.Spec.Lifecycle.Stopped) {
		if err := r.setStopped(ctx, obj); err != nil {
			return stopWith(0), fmt.Errorf("keeping the preempted workspace stopped: %w", err)
		}
	}
	return r.beginStop(ctx, w, workspacesv1.StopPreempted, now)
}

// setStopped sets a workspace's spec.lifecycle.stopped, as Apiary's field
// manager, for a stop that only its user is to undo (idle culling, a
// preemption under afterPreemption: Stay).
func (r *Reconciler) setStopped(ctx context.Context, obj *workspacesv1.WorkspaceDeployment) error {
	patched := obj.DeepCopy()
	if patched.Spec.Lifecycle == nil {
		patched.Spec.Lifecycle = &workspacesv1.WorkspaceLifecycle{}
	}
	patched.Spec.Lifecycle.Stopped = true
	if err := r.Patch(ctx, patched, client.MergeFrom(obj), client.FieldOwner("apiary")); err != nil {
		return err
	}
	obj.Spec.Lifecycle = patched.Spec.Lifecycle
	return nil
}

// stopping reports whether a workspace began to stop and has not started again.
func stopping(obj *workspacesv1.WorkspaceDeployment) bool {
	return obj.Status.Lifecycle != nil && obj.Status.Lifecycle.StopRequestedAt != nil
}

// lifecycleStatus is the workspace's status.lifecycle, made when missing.
func lifecycleStatus(obj *workspacesv1.WorkspaceDeployment) *workspacesv1.WorkspaceLifecycleStatus {
	if obj.Status.Lifecycle == nil {
		obj.Status.Lifecycle = &workspacesv1.WorkspaceLifecycleStatus{}
	}
	return obj.Status.Lifecycle
}

// markExpiry records when the workspace expires and, from the class's
// warning on, the ExpiresSoon condition with a Warning event when it turns
// True.
func (r *Reconciler) markExpiry(obj *workspacesv1.WorkspaceDeployment, v lifecycle.Verdict, classLC *workspacesv1.ClassLifecycle) {
	if v.ExpiresAt.IsZero() {
		if obj.Status.Lifecycle != nil {
			obj.Status.Lifecycle.ExpiresAt = nil
		}
		conditions.Delete(obj, workspacesv1.ExpiresSoonCondition)
		return
	}
	at := metav1.NewTime(v.ExpiresAt)
	lifecycleStatus(obj).ExpiresAt = &at
	if !v.ExpiresSoon {
		conditions.Delete(obj, workspacesv1.ExpiresSoonCondition)
		return
	}
	msg := fmt.Sprintf("the workspace expires at %s and will then be %s", v.ExpiresAt.UTC().Format(time.RFC3339),
		map[workspacesv1.ExpiryPolicy]string{workspacesv1.ExpiryStop: "stopped", workspacesv1.ExpiryDelete: "deleted"}[lifecycle.Policy(classLC)])
	if !conditions.IsTrue(obj, workspacesv1.ExpiresSoonCondition) && r.EventRecorder != nil {
		r.EventRecorder.Eventf(obj, nil, corev1.EventTypeWarning, workspacesv1.ExpiresSoonReason, "Expire", "%s", msg)
	}
	conditions.MarkTrue(obj, workspacesv1.ExpiresSoonCondition, workspacesv1.ExpiresSoonReason, "%s", msg)
}

// expireDelete deletes an expired workspace under the Delete policy. One
// that Flux applies would come back, so it is stopped instead, and a
// condition says why; Flux's labels alone prove nothing (appliedByFlux).
func (r *Reconciler) expireDelete(ctx context.Context, w *workspaceRun) (stepResult, error) {
	obj := w.obj
	if r.appliedByFlux(ctx, obj) {
		conditions.MarkFalse(obj, workspacesv1.ExpiresSoonCondition, workspacesv1.ExpiryDeleteRefusedReason,
			"the workspace expired; Flux applies it, so it is stopped instead of deleted: remove it from its source")
		return r.beginStop(ctx, w, workspacesv1.StopExpired, r.now())
	}
	uid := obj.UID
	err := r.Delete(ctx, obj.DeepCopy(), &client.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return stopWith(0), fmt.Errorf("deleting the expired workspace: %w", err)
	}
	if err == nil {
		metrics.ObserveExpiry(string(workspacesv1.ExpiryDelete))
		if r.EventRecorder != nil {
			r.EventRecorder.Eventf(obj, nil, corev1.EventTypeNormal, workspacesv1.ExpiredReason, "Expire",
				"the workspace expired and is deleted (its class's expiryPolicy is Delete)")
		}
	}
	return stopWith(0), nil
}

// +kubebuilder:rbac:groups=kustomize.toolkit.fluxcd.io,resources=kustomizations,verbs=get

// appliedByFlux reports whether Flux applies the workspace: its labels name
// a Kustomization (namespace and name) that exists and whose inventory
// (status.inventory.entries, ids <namespace>_<name>_<group>_<kind>) lists
// it. Without that proof (no such labels, no Kustomization, no Flux CRDs,
// no right to read it) it is not, and an expired workspace of a Delete
// class is deleted.
func (r *Reconciler) appliedByFlux(ctx context.Context, obj *workspacesv1.WorkspaceDeployment) bool {
	name, ns := obj.Labels[fluxManagedLabel], obj.Labels[fluxNamespaceLabel]
	if name == "" || ns == "" {
		return false
	}
	ks := &unstructured.Unstructured{}
	ks.SetGroupVersionKind(flux.KustomizationGVK)
	if err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, ks); err != nil {
		log.FromContext(ctx).V(1).Info("the workspace's Flux labels are not proved: its Kustomization cannot be read",
			"kustomization", ns+"/"+name, "error", err.Error())
		return false
	}
	want := obj.Namespace + "_" + obj.Name + "_" + workspacesv1.GroupVersion.Group + "_WorkspaceDeployment"
	entries, _, _ := unstructured.NestedSlice(ks.Object, "status", "inventory", "entries")
	for _, e := range entries {
		if m, ok := e.(map[string]any); ok && m["id"] == want {
			return true
		}
	}
	return false
}

// beginStart queues a stopped (or stopping) workspace that is to run again:
// its place in the queues for GPUs and quota is the time the start is first
// seen, recorded once. That time and the phase Pending are written before
// admission, as the stop's intent is, so that a watch sees the workspace
// queue (Stopped, Pending, then Waiting or Deploying) and a restart keeps
// its place.
func (r *Reconciler) beginStart(ctx context.Context, w *workspaceRun, now time.Time) error {
	l := lifecycleStatus(w.obj)
	w.starting = true
	if l.QueuedAt != nil && (l.StopRequestedAt == nil || !l.QueuedAt.Before(l.StopRequestedAt)) {
		return nil
	}
	at := metav1.NewTime(now)
	l.QueuedAt = &at
	w.obj.Status.Phase = workspacesv1.PhasePending
	w.obj.Status.Message = "starting: the workspace queues for its GPUs and quota again"
	if err := w.persist(ctx); err != nil {
		return fmt.Errorf("recording the start: %w", err)
	}
	if r.EventRecorder != nil {
		r.EventRecorder.Eventf(w.obj, nil, corev1.EventTypeNormal, workspacesv1.StartingReason, "Start", "%s", w.obj.Status.Message)
	}
	return nil
}

// cullIdle asks the class's activity source, at most once a check period,
// when a running workspace was last active, and stops it (setting
// spec.lifecycle.stopped, so that starting it again is the user's) once it
// has been idle long enough. Nothing is read without an idle policy.
func (r *Reconciler) cullIdle(ctx context.Context, w *workspaceRun, now time.Time) (stepResult, error) {
	obj, classLC := w.obj, lifecycleOf(w)
	if classLC == nil || classLC.Idle == nil || r.Activity == nil || obj.Status.Phase != workspacesv1.PhaseRunning {
		return proceed, nil
	}
	l := lifecycleStatus(obj)
	if l.RunningSince == nil {
		return proceed, nil
	}
	period := lifecycle.CheckPeriod(classLC.Idle)
	if l.ActivityCheckedAt != nil && now.Sub(l.ActivityCheckedAt.Time) < period {
		w.retry = sooner(w.retry, period-now.Sub(l.ActivityCheckedAt.Time))
		return proceed, nil
	}
	a := r.Activity.LastActivity(ctx, r.activityTarget(w, classLC.Idle))
	if a.Pending {
		// The reader asks off this worker and wakes the workspace with
		// its answer; the retry only covers a lost wake-up.
		w.retry = sooner(w.retry, activityPendingRetry)
		return proceed, nil
	}
	// Idle time is measured when the source was asked (a.At, on the same
	// clock as now), not when its answer is read.
	at := now
	if !a.At.IsZero() && a.At.Before(now) {
		at = a.At
	}
	// A probe started from a stale copy of the workspace (its check was
	// not due) is not another failure in a row.
	due := l.ActivityCheckedAt == nil || at.Sub(l.ActivityCheckedAt.Time) >= period/2
	checked := metav1.NewTime(at)
	l.ActivityCheckedAt = &checked
	if a.Known && (l.LastActivity == nil || a.Last.After(l.LastActivity.Time)) {
		last := metav1.NewTime(a.Last)
		l.LastActivity = &last
	}
	if a.Refused && r.EventRecorder != nil {
		r.EventRecorder.Eventf(obj, nil, corev1.EventTypeWarning, workspacesv1.ActivityProbeRefusedReason, "ProbeActivity",
			"the idle policy's activity was not asked (%s); the workspace is not culled as idle", a.Detail)
	}
	r.markActivity(w, a, due)
	v := lifecycle.DecideIdle(classLC.Idle, at, l.RunningSince.Time, a)
	w.retry = sooner(w.retry, max(v.Next.Sub(now), time.Second))
	if !v.Cull {
		return proceed, nil
	}
	log.FromContext(ctx).Info("stopping an idle workspace", "idleFor", v.IdleFor.String())
	if err := r.setStopped(ctx, obj); err != nil {
		return stopWith(0), fmt.Errorf("stopping the idle workspace: %w", err)
	}
	if r.EventRecorder != nil {
		r.EventRecorder.Eventf(obj, nil, corev1.EventTypeNormal, workspacesv1.IdleCulledReason, "Stop",
			"the workspace was idle for %s (its class stops workspaces idle for %s); set spec.lifecycle.stopped to false to start it again",
			v.IdleFor.Round(time.Second), classLC.Idle.After.Duration)
	}
	return r.beginStop(ctx, w, workspacesv1.StopIdle, now)
}

// markActivity counts the source's answers in a row without an activity
// (one per check period: due) and, from ActivityFailuresShown of them,
// shows them: ActivityKnown False
// with the source's detail, and, when it turns False, a Warning event on
// the workspace and on its class. An answer clears the count and turns a
// present condition True.
func (r *Reconciler) markActivity(w *workspaceRun, a lifecycle.Activity, due bool) {
	obj, l := w.obj, lifecycleStatus(w.obj)
	if a.Known {
		l.ActivityFailures = 0
		if conditions.Has(obj, workspacesv1.ActivityKnownCondition) {
			conditions.MarkTrue(obj, workspacesv1.ActivityKnownCondition, workspacesv1.ActivityKnownReason, "the idle policy's source answered")
		}
		return
	}
	if due && l.ActivityFailures < math.MaxInt32 {
		l.ActivityFailures++
	}
	if l.ActivityFailures < workspacesv1.ActivityFailuresShown {
		return
	}
	detail := a.Detail
	if detail == "" {
		detail = "no detail"
	}
	turned := !conditions.IsFalse(obj, workspacesv1.ActivityKnownCondition)
	conditions.MarkFalse(obj, workspacesv1.ActivityKnownCondition, workspacesv1.ActivityUnknownReason,
		"the idle policy's source gave no activity %d times in a row (last: %s); the workspace is not culled as idle", l.ActivityFailures, detail)
	if !turned || r.EventRecorder == nil {
		return
	}
	r.EventRecorder.Eventf(obj, nil, corev1.EventTypeWarning, workspacesv1.ActivityUnknownReason, "ProbeActivity",
		"the idle policy's source gave no activity %d times in a row (last: %s); the workspace is not culled as idle", l.ActivityFailures, detail)
	if w.class != nil {
		r.EventRecorder.Eventf(w.class, obj, corev1.EventTypeWarning, workspacesv1.ActivityUnknownReason, "ProbeActivity",
			"the idle policy's source gave no activity for workspace %s/%s %d times in a row (last: %s)", obj.Namespace, obj.Name, l.ActivityFailures, detail)
	}
}

// activityPendingRetry is how soon a workspace whose activity probe is in
// flight is reconciled again if the reader's wake-up is lost: a probe
// takes at most its timeout (5 s by default).
const activityPendingRetry = 10 * time.Second

// activityTarget is what the activity source is asked about.
func (r *Reconciler) activityTarget(w *workspaceRun, p *workspacesv1.IdlePolicy) lifecycle.ActivityTarget {
	t := lifecycle.ActivityTarget{Workspace: types.NamespacedName{Namespace: w.obj.Namespace, Name: w.obj.Name}, Cluster: w.cdKey,
		Namespace: childNamespace(w.obj.Name), Release: releaseName(w.obj), Policy: p}
	if p.Source.Endpoint != nil {
		for i := range w.class.Spec.AccessEndpoints {
			if e := &w.class.Spec.AccessEndpoints[i]; e.Name == p.Source.Endpoint.Endpoint {
				t.Endpoint = e
			}
		}
	}
	return t
}

// markRunning records when a workspace with a lifecycle reached Running:
// idle culling counts its runtime from then, and first asks its source a
// check period later (the delay returned).
func (r *Reconciler) markRunning(w *workspaceRun) time.Duration {
	classLC := lifecycleOf(w)
	if w.obj.Spec.Lifecycle == nil && classLC == nil && w.obj.Status.Lifecycle == nil {
		return 0
	}
	at := metav1.NewTime(r.now())
	l := lifecycleStatus(w.obj)
	l.RunningSince, l.LastActivity, l.ActivityCheckedAt, l.ActivityFailures = &at, nil, nil, 0
	conditions.Delete(w.obj, workspacesv1.ActivityKnownCondition)
	if classLC != nil && classLC.Idle != nil && r.Activity != nil {
		return lifecycle.CheckPeriod(classLC.Idle)
	}
	return 0
}
