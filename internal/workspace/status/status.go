// Package status reads and summarises a WorkspaceDeployment's status the way
// more than one part of Apiary needs it: the kstatus conditions the
// controller derives from the phase (Summarize), and the reason a waiting
// workspace waits, for its events and the metrics (WaitingReason,
// HoldReason).
package status

import (
	"github.com/fluxcd/pkg/runtime/conditions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// WaitingReason is the reason a Waiting workspace waits: that of its
// QuotaReserved condition when False, else that of GPUCapacityAvailable
// when False, else WaitingForGpuCapacity.
func WaitingReason(obj *workspacesv1.WorkspaceDeployment) string {
	for _, t := range []string{workspacesv1.QuotaReservedCondition, workspacesv1.GPUCapacityCondition} {
		if conditions.IsFalse(obj, t) {
			return conditions.GetReason(obj, t)
		}
	}
	return workspacesv1.WaitingForGPUCapacityReason
}

// HoldReason is why a Pending or Waiting workspace is held up, the reason
// its Ready condition and events give: for Waiting, WaitingReason; for
// Pending, the reason of the condition that reported the very message the
// workspace shows (e.g. ConfigResolved's ValuesFromNotFound), else Pending.
// Other phases give their name.
func HoldReason(obj *workspacesv1.WorkspaceDeployment) string {
	switch obj.Status.Phase {
	case workspacesv1.PhaseWaiting:
		return WaitingReason(obj)
	case workspacesv1.PhasePending:
		for _, c := range obj.Status.Conditions {
			if c.Status == metav1.ConditionFalse && c.Reason != "" && c.Message == obj.Status.Message && !summaryCondition[c.Type] {
				return c.Reason
			}
		}
	}
	return commonv1.PhaseReason(obj.Status.Phase)
}

// summaryCondition marks the conditions Summarize writes.
var summaryCondition = map[string]bool{
	commonv1.ReadyCondition: true, commonv1.ReconcilingCondition: true, commonv1.StalledCondition: true,
}
