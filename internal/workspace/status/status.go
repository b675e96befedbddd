// Package status reads and summarises a WorkspaceDeployment's status the way
// more than one part of Apiary needs it: the kstatus conditions the
// controller derives from the phase (Summarize), and the reason a waiting
// workspace waits, for its events and the metrics (WaitingReason).
package status

import (
	"github.com/fluxcd/pkg/runtime/conditions"

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
