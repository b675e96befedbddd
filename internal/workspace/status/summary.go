package status

import (
	"github.com/fluxcd/pkg/runtime/conditions"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// Summarize derives Ready, Reconciling and Stalled from the phase
// and the outcome of the reconciliation.
func Summarize(obj *workspacesv1.WorkspaceDeployment, err error) {
	phase := obj.Status.Phase
	switch {
	case !obj.DeletionTimestamp.IsZero():
		conditions.MarkFalse(obj, commonv1.ReadyCondition, commonv1.DeletingReason, "%s", obj.Status.Message)
		conditions.MarkReconciling(obj, commonv1.DeletingReason, "%s", obj.Status.Message)
		conditions.Delete(obj, commonv1.StalledCondition)
	case err != nil:
		conditions.MarkFalse(obj, commonv1.ReadyCondition, commonv1.FailedReason, "%s", err)
		conditions.MarkReconciling(obj, commonv1.ProgressingWithRetryReason, "%s", err)
		conditions.Delete(obj, commonv1.StalledCondition)
	case obj.Spec.Suspend && phase != workspacesv1.PhaseStopped:
		// A suspended workspace keeps the status it had, unless its class's
		// lifecycle stops it (suspend pauses delivery, not the lifecycle).
	case phase == workspacesv1.PhaseFailed:
		conditions.MarkFalse(obj, commonv1.ReadyCondition, conditions.GetReason(obj, commonv1.StalledCondition), "%s", obj.Status.Message)
		conditions.Delete(obj, commonv1.ReconcilingCondition)
	case phase == workspacesv1.PhaseStopped && Stopped(obj):
		// Stopped is the state the spec asks for, not progress: Ready is
		// True with reason Stopped (kstatus and Flux read it Current, as
		// they read Ready), and the phase says the workspace cannot be used.
		conditions.MarkTrue(obj, commonv1.ReadyCondition, workspacesv1.StoppedReason, "%s", obj.Status.Message)
		conditions.Delete(obj, commonv1.ReconcilingCondition)
		conditions.Delete(obj, commonv1.StalledCondition)
	case phase == workspacesv1.PhaseStopped:
		conditions.MarkFalse(obj, commonv1.ReadyCondition, workspacesv1.StoppingReason, "%s", obj.Status.Message)
		conditions.MarkReconciling(obj, workspacesv1.StoppingReason, "%s", obj.Status.Message)
		conditions.Delete(obj, commonv1.StalledCondition)
	case phase == workspacesv1.PhaseRunning:
		conditions.MarkTrue(obj, commonv1.ReadyCondition, workspacesv1.DeploymentReadyReason, "Workspace is running")
		conditions.Delete(obj, commonv1.ReconcilingCondition)
		conditions.Delete(obj, commonv1.StalledCondition)
	default:
		// Ready names what the workspace waits for; Reconciling its phase.
		conditions.MarkFalse(obj, commonv1.ReadyCondition, HoldReason(obj), "%s", obj.Status.Message)
		conditions.MarkReconciling(obj, commonv1.PhaseReason(phase), "%s", obj.Status.Message)
		conditions.Delete(obj, commonv1.StalledCondition)
	}
	// A workspace that deploys again, or runs, has recovered.
	if phase == workspacesv1.PhaseDeploying || phase == workspacesv1.PhaseRunning {
		obj.Status.FailureContext = nil
	}
}

// Stopped is true once a workspace finished stopping: its workloads are
// scaled away and its GPUs, quota and URLs given back.
func Stopped(obj *workspacesv1.WorkspaceDeployment) bool {
	l := obj.Status.Lifecycle
	return l != nil && l.StoppedAt != nil
}
