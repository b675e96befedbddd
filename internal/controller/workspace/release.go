package workspace

import (
	"context"
	"fmt"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/delivery/canon"
	"github.com/apiaryhq/apiary/internal/k0rdentstatus"
)

// observeRelease reads the workspace's release state from its ServiceSet.
func (r *Reconciler) observeRelease(ctx context.Context, w *workspaceRun) (stepResult, error) {
	obj := w.obj
	ss := &k0rdentv1beta1.ServiceSet{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: w.cdKey.Namespace, Name: serviceSetName(obj)}, ss); err != nil {
		if !apierrors.IsNotFound(err) {
			return stopWith(0), fmt.Errorf("reading ServiceSet: %w", err)
		}
		// Just applied, not in the cache yet: its create event brings the
		// workspace back. The message is the one of a ServiceSet that has
		// not deployed the release yet, so that neither step writes status.
		obj.Status.Phase, obj.Status.Message = workspacesv1.PhaseDeploying, deployingMessage(releaseName(obj), w.cdKey.Name)
		if hold := holdFirstWrite(w, time.Now()); hold > 0 {
			return stopWith(hold), nil
		}
		return stopWith(5 * time.Second), nil
	}
	name := releaseName(obj)
	if got := ss.Annotations[canon.AnnotationAppliedDigest]; w.serviceSetDigest != "" && got != w.serviceSetDigest {
		// The cache still holds the ServiceSet from before the apply: its
		// release state is of the previous values. Its update event brings
		// the workspace back.
		obj.Status.Phase, obj.Status.Message = workspacesv1.PhaseDeploying, deployingMessage(name, w.cdKey.Name)
		if !conditions.IsFalse(obj, workspacesv1.HelmReleaseReadyCondition) {
			conditions.MarkFalse(obj, workspacesv1.HelmReleaseReadyCondition, workspacesv1.HelmReleaseNotReadyReason,
				"waiting for release %s to be deployed", name)
		}
		return stopWith(5 * time.Second), nil
	}
	var since *time.Time
	if t := conditions.GetLastTransitionTime(obj, workspacesv1.HelmReleaseReadyCondition); t != nil && conditions.IsFalse(obj, workspacesv1.HelmReleaseReadyCondition) {
		since = &t.Time
	}
	timeout := deployTimeout(w.class)
	// The wall clock: since is a condition's transition time, which the
	// conditions library stamps with it.
	rel := k0rdentstatus.ReleaseVerdict(ss, name, since, timeout, time.Now())
	switch rel.Outcome {
	case k0rdentstatus.ReleaseFailed:
		msg := "Helm release failed: " + rel.FailureMessage
		conditions.MarkFalse(obj, workspacesv1.HelmReleaseReadyCondition, workspacesv1.HelmReleaseFailedReason, "%s", msg)
		r.fail(ctx, obj, workspacesv1.HelmReleaseFailedReason, msg)
		return stopWith(0), nil
	case k0rdentstatus.ReleaseDeployed:
		conditions.MarkTrue(obj, workspacesv1.HelmReleaseReadyCondition, workspacesv1.HelmReleaseDeployedReason, "release %s is deployed", name)
		obj.Status.Phase, obj.Status.Message = workspacesv1.PhaseRunning, "Workspace is running"
		return proceed, nil
	case k0rdentstatus.ReleaseDeleted:
		msg := deletedMessage(name, w.cdKey.Name, !ss.DeletionTimestamp.IsZero())
		conditions.MarkFalse(obj, workspacesv1.HelmReleaseReadyCondition, workspacesv1.HelmReleaseDeletedReason, "%s", msg)
		r.fail(ctx, obj, workspacesv1.HelmReleaseDeletedReason, msg)
		return stopWith(0), nil
	case k0rdentstatus.ReleaseTimedOut:
		msg := fmt.Sprintf("release %s was not deployed within %s (%s)", name, timeout, rel.Seen)
		conditions.MarkFalse(obj, workspacesv1.HelmReleaseReadyCondition, workspacesv1.DeployTimeoutReason, "%s", msg)
		r.fail(ctx, obj, workspacesv1.DeployTimeoutReason, msg)
		return stopWith(0), nil
	}
	// A release that was deleted and is delivered again is on its way.
	if !conditions.IsFalse(obj, workspacesv1.HelmReleaseReadyCondition) ||
		conditions.GetReason(obj, workspacesv1.HelmReleaseReadyCondition) == workspacesv1.HelmReleaseDeletedReason {
		conditions.MarkFalse(obj, workspacesv1.HelmReleaseReadyCondition, workspacesv1.HelmReleaseNotReadyReason,
			"waiting for release %s to be deployed", name)
	}
	obj.Status.Phase = workspacesv1.PhaseDeploying
	obj.Status.Message = deployingMessage(name, w.cdKey.Name)
	if rel.State != "" && rel.State != k0rdentv1beta1.ServiceStateProvisioning && rel.State != k0rdentv1beta1.ServiceStatePending {
		obj.Status.Message += " (" + rel.Seen + ")"
	}
	if hold := holdFirstWrite(w, ss.CreationTimestamp.Time); hold > 0 {
		return stopWith(hold), nil
	}
	// The ServiceSet's events wake the workspace; the requeue is the
	// deadline of its deploy timeout.
	return stopWith(rel.Wait + time.Second), nil
}

// deployingMessage says that a release is on its way. It is the same from
// the apply until k0rdent reports the release deployed (no state yet, or
// Provisioning), so that the progress in between, which the ServiceSet
// shows, costs no status write.
func deployingMessage(release, cluster string) string {
	return fmt.Sprintf("waiting for release %s on cluster %q to be deployed", release, cluster)
}

// deletedMessage says that k0rdent removed a workspace's release, and what
// brings it back: its ServiceSet delivered again once a deletion in progress
// ends, else a change of the workspace.
func deletedMessage(release, cluster string, serviceSetDeleting bool) string {
	msg := fmt.Sprintf("release %s on cluster %q was deleted (k0rdent reports it Deleted)", release, cluster)
	if serviceSetDeleting {
		return msg + "; its ServiceSet is being deleted, and is delivered again once it is gone"
	}
	return msg + "; it is not installed again until the workspace or its ServiceSet changes"
}
