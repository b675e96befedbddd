package workspace

import (
	"context"
	"fmt"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/reconciler"
	"github.com/apiaryhq/apiary/internal/crashpoint"
	"github.com/apiaryhq/apiary/internal/delivery/canon"
	"github.com/apiaryhq/apiary/internal/metrics"
	"github.com/apiaryhq/apiary/internal/resources"
	"github.com/apiaryhq/apiary/internal/usage"
	"github.com/apiaryhq/apiary/internal/wake"
)

// How a workspace stops and starts again (docs/lifecycle.md). Stopping
// pauses the ServiceSet last delivered for the workspace with k0rdent's
// pause annotation, so that its Sveltos profile runs no Helm action: in
// direct mode by a patch of the live ServiceSet (pauseDelivered), without
// rendering the spec, so that a spec that no longer renders cannot keep a
// workspace from stopping; in Git mode by committing the rendered
// ServiceSet with the pause (deploy, pauseServiceSet), or, when the spec no
// longer renders, by the live patch. It then scales the release's workload
// controllers on the child to zero (package scaledown), gives back its GPU
// admission and quota charge, and withdraws its routes (halt). Nothing is
// delivered for a stopped workspace, so its values stay byte for byte what
// Helm last installed, and it is checked again whenever a pod appears in its
// child namespace, and at least every stoppedResync (watchStopped). Starting
// queues it for GPUs and quota again, scales the controllers back and lifts
// the live pause (resume), then delivers the ServiceSet without the pause.

// beginStop records the intent to stop, then pauses what was delivered and
// halts (pauseDelivered), or in Git mode lets the steps commit the paused
// ServiceSet; a workspace that finished stopping goes straight to halt,
// which only checks that its workloads stay scaled away.
func (r *Reconciler) beginStop(ctx context.Context, w *workspaceRun, reason workspacesv1.StopReason, now time.Time) (stepResult, error) {
	obj := w.obj
	l := lifecycleStatus(obj)
	w.stopping = reason
	expired := reason == workspacesv1.StopExpired && l.StopReason != reason
	first := l.StopRequestedAt == nil
	switch {
	case first:
		at := metav1.NewTime(now)
		l.StopRequestedAt, l.StoppedAt, l.StopReason = &at, nil, reason
		l.Preemption = nil // a preemption writes its record with the intent (markPreempted)
		obj.Status.Phase = workspacesv1.PhaseStopped
		obj.Status.Message = fmt.Sprintf("stopping (%s): pausing the release, then scaling its workloads to zero", reason)
	case expired:
		l.StopReason = reason // expiry holds it stopped, whatever stopped it first
	}
	if expired {
		metrics.ObserveExpiry(string(workspacesv1.ExpiryStop))
	}
	if first {
		// The intent is written before anything changes, so that a restart
		// finishes the stop. The write replaces the status: l is read again.
		if err := w.persist(ctx); err != nil {
			return stopWith(0), fmt.Errorf("recording the stop: %w", err)
		}
		crashpoint.Reach(crashpoint.WorkspaceStopRequested)
	}
	if l = lifecycleStatus(obj); l.StoppedAt != nil || !everDelivered(obj) {
		return r.halt(ctx, w) // stopped, or nothing to pause
	}
	g, err := reconciler.GitOf(ctx, r.Sink, obj.Namespace)
	if err != nil {
		return stopWith(0), err
	}
	if g != nil {
		// Git mode commits the pause (deploy); pauseDelivered when the spec
		// does not render.
		return proceed, nil
	}
	return r.pauseDelivered(ctx, w, "")
}

// pauseDelivered pauses the ServiceSets the workspace's inventory holds
// (what was last delivered for it) by a patch of the live objects, then
// halts it: nothing of the spec is rendered. why, when set, is why the
// stop could not commit the pause (Git mode), recorded with a Warning.
func (r *Reconciler) pauseDelivered(ctx context.Context, w *workspaceRun, why string) (stepResult, error) {
	obj := w.obj
	if why != "" && r.EventRecorder != nil {
		r.EventRecorder.Eventf(obj, nil, corev1.EventTypeWarning, workspacesv1.StoppingReason, "Stop",
			"the workspace's spec does not render (%s); its ServiceSet is paused where it runs, and the workspace stops", why)
	}
	if d := obj.Status.Delivery; d != nil && d.Inventory != nil {
		for _, e := range d.Inventory.Entries {
			id, err := canon.ParseID(e.ID)
			if err != nil || id.Kind != "ServiceSet" || id.Group != k0rdentv1beta1.GroupVersion.Group {
				continue
			}
			if res, err := r.pauseLive(ctx, w, client.ObjectKey{Namespace: id.Namespace, Name: id.Name}); err != nil || res.stop {
				return res, err
			}
		}
	}
	return r.halt(ctx, w)
}

// pauseLive adds k0rdent's pause annotation to a live ServiceSet; one that
// is gone or paused already is left as it is. One whose drift detection
// would scale the workloads back is not paused: the stop is refused
// (driftRevertsScale).
func (r *Reconciler) pauseLive(ctx context.Context, w *workspaceRun, key client.ObjectKey) (stepResult, error) {
	ss := &k0rdentv1beta1.ServiceSet{}
	if err := r.Get(ctx, key, ss); err != nil {
		if apierrors.IsNotFound(err) {
			return proceed, nil
		}
		return stopWith(0), fmt.Errorf("reading ServiceSet %s: %w", key, err)
	}
	if m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ss); err == nil {
		u := &unstructured.Unstructured{Object: m}
		u.SetKind("ServiceSet")
		if why := driftRevertsScale(w.obj, []*unstructured.Unstructured{u}); why != "" {
			r.fail(ctx, w.obj, workspacesv1.StopUnsupportedReason, why)
			return stopWith(0), nil
		}
	}
	if ss.Annotations[k0rdentv1beta1.ServiceSetPausedAnnotation] == "true" {
		return proceed, nil
	}
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:"true"}}}`, k0rdentv1beta1.ServiceSetPausedAnnotation))
	if err := r.Patch(ctx, ss, client.RawPatch(types.MergePatchType, patch)); client.IgnoreNotFound(err) != nil {
		return stopWith(0), fmt.Errorf("pausing ServiceSet %s: %w", key, err)
	}
	return proceed, nil
}

// pauseServiceSet adds k0rdent's pause annotation to the workspace's
// ServiceSet among rendered objects; the renderer's objects are not changed.
func pauseServiceSet(obj *workspacesv1.WorkspaceDeployment, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, len(objs))
	copy(out, objs)
	name := serviceSetName(obj)
	for i, o := range out {
		if o.GetKind() != "ServiceSet" || o.GetName() != name {
			continue
		}
		o = o.DeepCopy()
		a := o.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		a[k0rdentv1beta1.ServiceSetPausedAnnotation] = "true"
		o.SetAnnotations(a)
		out[i] = o
	}
	return out
}

// driftRevertsScale says why a workspace's ServiceSet cannot hold a stop:
// Sveltos's drift detection (syncMode ContinuousWithDriftDetection) puts
// back the replicas Apiary scales to zero, unless /spec/replicas is among
// its driftExclusions. Empty when the stop holds. Only a bundle of the
// class's own can turn drift detection on.
func driftRevertsScale(obj *workspacesv1.WorkspaceDeployment, objs []*unstructured.Unstructured) string {
	name := serviceSetName(obj)
	for _, o := range objs {
		if o.GetKind() != "ServiceSet" || o.GetName() != name {
			continue
		}
		mode, _, _ := unstructured.NestedString(o.Object, "spec", "provider", "config", "syncMode")
		if mode != "ContinuousWithDriftDetection" {
			return ""
		}
		exclusions, _, _ := unstructured.NestedSlice(o.Object, "spec", "provider", "config", "driftExclusions")
		for _, e := range exclusions {
			m, _ := e.(map[string]any)
			paths, _, _ := unstructured.NestedStringSlice(m, "paths")
			for _, p := range paths {
				if p == "/spec/replicas" || p == "/spec" {
					return ""
				}
			}
		}
		return "the workspace cannot be stopped: its class's bundle turns on Sveltos drift detection " +
			"(syncMode ContinuousWithDriftDetection), which would scale its workloads back; add a driftExclusion " +
			"of /spec/replicas to the bundle's provider config, or set spec.lifecycle.stopped to false"
	}
	return ""
}

// halt finishes a stop once the paused ServiceSet is delivered: the
// release's workloads go to zero on the child, then the GPU admission, the
// quota charge and the routes are given back. A workspace that stopped
// before is checked again: workloads something scaled up (a Helm upgrade)
// go back to zero, with a Warning.
func (r *Reconciler) halt(ctx context.Context, w *workspaceRun) (stepResult, error) {
	obj := w.obj
	if w.stopping == "" {
		return proceed, nil
	}
	if obj.Status.Admission == nil && r.Ledger != nil {
		// Given back before: its place in the count of the quotas that
		// select it now (a quota created, or a namespace that joined the
		// tenant, after it stopped).
		quotas, err := r.quotasOf(ctx, obj.Namespace)
		if err != nil {
			return stopWith(0), err
		}
		if err := r.keepQuotas(ctx, w, quotas, true); err != nil {
			return stopWith(0), err
		}
	}
	l := lifecycleStatus(obj)
	if l.StoppedAt != nil && !w.requested && !r.stopChecks.due(obj.UID, r.now()) && r.stoppedQuiet(ctx, w) {
		return r.watchStopped(ctx, w)
	}
	cc, err := r.Children.Client(ctx, w.cdKey)
	if err != nil {
		obj.Status.Message = fmt.Sprintf("stopping: waiting for access to the child cluster: %s", err)
		w.waitFor(clusterTopic(waitChild, w.cdKey))
		return stopWith(30 * time.Second), nil
	}
	res, err := r.stopWorkloads(ctx, w, cc)
	if err != nil {
		return stopWith(0), fmt.Errorf("scaling the workspace's workloads to zero: %w", err)
	}
	crashpoint.Reach(crashpoint.WorkspaceStopScaled)
	r.stopChecks.done(obj.UID, r.now())
	if l.StoppedAt != nil && res.Reverted+res.Scaled > 0 && r.EventRecorder != nil {
		r.EventRecorder.Eventf(obj, nil, corev1.EventTypeWarning, workspacesv1.StopRevertedReason, "Stop",
			"%d workload(s) of the stopped workspace ran again (scaled up, or installed by a Helm action in flight when it stopped); scaled back to zero",
			res.Reverted+res.Scaled)
	}
	if err := r.giveBack(ctx, w); err != nil {
		return stopWith(0), err
	}
	if done, err := r.withdrawRoutes(ctx, w); err != nil || !done {
		return stopWith(5 * time.Second), err
	}
	conditions.MarkFalse(obj, workspacesv1.HelmReleaseReadyCondition, workspacesv1.StoppedReason,
		"the release's workloads are scaled to zero; its volumes are kept")
	// A stopped workspace neither runs nor demands anything: no runtime
	// for idle culling, no verdict on whether its demand fits (both come
	// back when it starts).
	l.RunningSince = nil
	obj.Status.Feasibility = nil
	conditions.Delete(obj, workspacesv1.FeasibleCondition)
	obj.Status.Phase = workspacesv1.PhaseStopped
	obj.Status.Message = "Workspace is stopped; its namespace and volumes are kept"
	if l.StoppedAt == nil {
		at := metav1.NewTime(r.now())
		l.StoppedAt = &at
		metrics.ObserveStop(l.StopReason)
		if r.EventRecorder != nil {
			r.EventRecorder.Eventf(obj, nil, corev1.EventTypeNormal, workspacesv1.StoppedReason, "Stop",
				"the workspace stopped (%s): its workloads are scaled to zero and its GPUs, quota and URLs given back; its namespace and volumes are kept",
				l.StopReason)
		}
	}
	return r.watchStopped(ctx, w)
}

// giveBack releases the workspace's GPU admission and quota charges, and
// counts the GPUs; the waiting workspaces are woken by the status change
// (siblingChanged) and the quotas' (quotaWaiters).
func (r *Reconciler) giveBack(ctx context.Context, w *workspaceRun) error {
	obj := w.obj
	a := obj.Status.Admission
	if a == nil {
		return nil
	}
	if r.Ledger != nil {
		// A stopped workspace keeps its place in its tenant's workspaces
		// count (its namespace and volumes stay) and gives back the rest.
		quotas, err := r.quotasOf(ctx, obj.Namespace)
		if err != nil {
			return err
		}
		if err := r.keepQuotas(ctx, w, quotas, true); err != nil {
			return fmt.Errorf("giving back the workspace's quota: %w", err)
		}
	}
	crashpoint.Reach(crashpoint.WorkspaceStopReleased)
	usage.CountAdmission(&obj.Status, a, r.admittedAt().Time)
	obj.Status.Admission = nil
	r.gate.forget(w.cdKey, obj.UID)
	conditions.Delete(obj, workspacesv1.GPUCapacityCondition)
	conditions.Delete(obj, workspacesv1.QuotaReservedCondition)
	metrics.ObserveGPUsReleased(lifecycleStatus(obj).StopReason, w.cdKey.String(), a.ResourceName,
		resources.SatMul(a.GPUsPerReplica, int64(a.Replicas)))
	return nil
}

// withdrawRoutes deletes the workspace's routes and frees its pool ports,
// remembering them to ask for again when it starts; its host names follow
// from its name and come back with it.
func (r *Reconciler) withdrawRoutes(ctx context.Context, w *workspaceRun) (bool, error) {
	obj := w.obj
	if rs := obj.Status.Routes; rs != nil && len(rs.Ports) > 0 {
		lifecycleStatus(obj).Ports = append([]workspacesv1.PortAssignment(nil), rs.Ports...)
	}
	done, err := r.routing.Drop(ctx, obj)
	if err != nil {
		return false, fmt.Errorf("withdrawing the workspace's routes: %w", err)
	}
	if !done {
		w.waitFor(wake.Topic{Kind: waitSync})
		return false, nil
	}
	obj.Status.Access = nil
	conditions.Delete(obj, workspacesv1.RoutesReadyCondition)
	return true, nil
}

// resume scales a starting workspace's workloads back, once it is admitted
// again; deploy then delivers its ServiceSet without the pause.
func (r *Reconciler) resume(ctx context.Context, w *workspaceRun) (stepResult, error) {
	obj := w.obj
	if !w.starting {
		return proceed, nil
	}
	cc, err := r.Children.Client(ctx, w.cdKey)
	if err != nil {
		pending(obj, "starting: waiting for access to the child cluster: %s", err)
		w.waitFor(clusterTopic(waitChild, w.cdKey))
		return stopWith(30 * time.Second), nil
	}
	res, err := r.startWorkloads(ctx, w, cc)
	if err != nil {
		return stopWith(0), fmt.Errorf("scaling the workspace's workloads back: %w", err)
	}
	crashpoint.Reach(crashpoint.WorkspaceStartScaled)
	// The pause may be on the live ServiceSet only (pauseDelivered), where
	// delivering the ServiceSet without it does not lift it.
	if err := r.unpause(ctx, obj); err != nil {
		return stopWith(0), err
	}
	r.Children.Release(w.cdKey, workspaceWatchOwner(obj)) // watchStopped's
	r.stopChecks.forget(obj.UID)
	l := lifecycleStatus(obj)
	l.StopRequestedAt, l.StoppedAt, l.StopReason = nil, nil, ""
	metrics.ObserveStart()
	if r.EventRecorder != nil {
		// Its own reason: the events API folds events of one reason,
		// action and object into the first one's series and message.
		r.EventRecorder.Eventf(obj, nil, corev1.EventTypeNormal, workspacesv1.StartedReason, "Start",
			"the workspace was admitted again: %d workload(s) scaled back", res.Restored)
	}
	obj.Status.Phase = workspacesv1.PhaseDeploying
	obj.Status.Message = "starting: delivering the workspace's ServiceSet without the pause"
	return proceed, nil
}

// unpause removes k0rdent's pause from a deleted workspace's ServiceSet: a
// paused profile never runs its deletion, and k0rdent would hold the
// ServiceSet forever. It patches the live object (in Git mode too, where
// the commit that removes it is already made), and only the workspace's
// own: a ServiceSet of that name another workspace holds keeps its pause.
func (r *Reconciler) unpause(ctx context.Context, obj *workspacesv1.WorkspaceDeployment) error {
	ss, held, err := r.ownServiceSet(ctx, obj)
	if err != nil || ss == nil {
		return err
	}
	if _, ok := ss.Annotations[k0rdentv1beta1.ServiceSetPausedAnnotation]; !ok {
		return nil
	}
	key := client.ObjectKeyFromObject(ss)
	if !held {
		log.FromContext(ctx).Info("not unpausing a ServiceSet of another workspace", "serviceSet", key.String())
		return nil
	}
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, k0rdentv1beta1.ServiceSetPausedAnnotation))
	if err := r.Patch(ctx, ss, client.RawPatch(types.MergePatchType, patch)); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("unpausing ServiceSet %s: %w", key, err)
	}
	return nil
}
