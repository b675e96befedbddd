package status

import (
	"testing"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

func TestWaitingReason(t *testing.T) {
	g := NewWithT(t)
	w := &workspacesv1.WorkspaceDeployment{}
	g.Expect(WaitingReason(w)).To(Equal(workspacesv1.WaitingForGPUCapacityReason), "no condition says more")
	conditions.MarkFalse(w, workspacesv1.GPUCapacityCondition, workspacesv1.GPUCapacityFragmentedReason, "fragmented")
	g.Expect(WaitingReason(w)).To(Equal(workspacesv1.GPUCapacityFragmentedReason))
	conditions.MarkFalse(w, workspacesv1.QuotaReservedCondition, workspacesv1.QuotaExceededReason, "full")
	g.Expect(WaitingReason(w)).To(Equal(workspacesv1.QuotaExceededReason), "the quota's reason comes first")
	conditions.MarkTrue(w, workspacesv1.QuotaReservedCondition, workspacesv1.QuotaReservedReason, "reserved")
	g.Expect(WaitingReason(w)).To(Equal(workspacesv1.GPUCapacityFragmentedReason))
}
