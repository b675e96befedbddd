package status

import (
	"errors"
	"testing"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// TestSummarize: the kstatus conditions a user and Flux read, per phase and
// outcome of a reconcile.
func TestSummarize(t *testing.T) {
	now := metav1.Now()
	type want struct {
		ready, reconciling, stalled string // status of each condition, "" when absent
		readyReason                 string
		keepsFailureContext         bool
	}
	cases := []struct {
		name  string
		phase workspacesv1.WorkspacePhase
		err   error
		setup func(*workspacesv1.WorkspaceDeployment)
		want  want
	}{
		{name: "running", phase: workspacesv1.PhaseRunning,
			want: want{ready: "True", readyReason: workspacesv1.DeploymentReadyReason}},
		{name: "pending", phase: workspacesv1.PhasePending,
			want: want{ready: "False", reconciling: "True", readyReason: string(workspacesv1.PhasePending), keepsFailureContext: true}},
		{name: "pending names the valuesFrom object it waits for", phase: workspacesv1.PhasePending,
			setup: func(w *workspacesv1.WorkspaceDeployment) {
				conditions.MarkFalse(w, workspacesv1.ConfigResolvedCondition, workspacesv1.ValuesFromNotFoundReason, "message")
			},
			want: want{ready: "False", reconciling: "True", readyReason: workspacesv1.ValuesFromNotFoundReason, keepsFailureContext: true}},
		{name: "pending ignores a condition that says something else", phase: workspacesv1.PhasePending,
			setup: func(w *workspacesv1.WorkspaceDeployment) {
				conditions.MarkFalse(w, workspacesv1.ConfigResolvedCondition, workspacesv1.ValuesFromNotFoundReason, "an older wait")
			},
			want: want{ready: "False", reconciling: "True", readyReason: string(workspacesv1.PhasePending), keepsFailureContext: true}},
		{name: "waiting for GPUs", phase: workspacesv1.PhaseWaiting,
			want: want{ready: "False", reconciling: "True", readyReason: workspacesv1.WaitingForGPUCapacityReason, keepsFailureContext: true}},
		{name: "waiting on fragmented GPUs", phase: workspacesv1.PhaseWaiting,
			setup: func(w *workspacesv1.WorkspaceDeployment) {
				conditions.MarkFalse(w, workspacesv1.GPUCapacityCondition, workspacesv1.GPUCapacityFragmentedReason, "x")
			},
			want: want{ready: "False", reconciling: "True", readyReason: workspacesv1.GPUCapacityFragmentedReason, keepsFailureContext: true}},
		{name: "waiting on quota", phase: workspacesv1.PhaseWaiting,
			setup: func(w *workspacesv1.WorkspaceDeployment) {
				conditions.MarkFalse(w, workspacesv1.GPUCapacityCondition, workspacesv1.GPUCapacityFragmentedReason, "x")
				conditions.MarkFalse(w, workspacesv1.QuotaReservedCondition, workspacesv1.QuotaExceededReason, "x")
			},
			want: want{ready: "False", reconciling: "True", readyReason: workspacesv1.QuotaExceededReason, keepsFailureContext: true}},
		{name: "stopping is progress", phase: workspacesv1.PhaseStopped,
			setup: func(w *workspacesv1.WorkspaceDeployment) {
				w.Status.Lifecycle = &workspacesv1.WorkspaceLifecycleStatus{StopRequestedAt: &now}
			},
			want: want{ready: "False", reconciling: "True", readyReason: workspacesv1.StoppingReason, keepsFailureContext: true}},
		{name: "stopped is the state asked for", phase: workspacesv1.PhaseStopped,
			setup: func(w *workspacesv1.WorkspaceDeployment) {
				w.Status.Lifecycle = &workspacesv1.WorkspaceLifecycleStatus{StopRequestedAt: &now, StoppedAt: &now}
			},
			want: want{ready: "True", readyReason: workspacesv1.StoppedReason, keepsFailureContext: true}},
		{name: "deploying clears a failure", phase: workspacesv1.PhaseDeploying,
			want: want{ready: "False", reconciling: "True", readyReason: string(workspacesv1.PhaseDeploying)}},
		{name: "failed reads its stalled reason", phase: workspacesv1.PhaseFailed,
			setup: func(w *workspacesv1.WorkspaceDeployment) {
				conditions.MarkReconciling(w, "Deploying", "x")
				conditions.MarkStalled(w, workspacesv1.DeployTimeoutReason, "too slow")
			},
			want: want{ready: "False", stalled: "True", readyReason: workspacesv1.DeployTimeoutReason, keepsFailureContext: true}},
		{name: "an error retries", phase: workspacesv1.PhaseRunning, err: errors.New("boom"),
			setup: func(w *workspacesv1.WorkspaceDeployment) { conditions.MarkStalled(w, "Old", "x") },
			want:  want{ready: "False", reconciling: "True", readyReason: commonv1.FailedReason}},
		{name: "deleting", phase: workspacesv1.PhaseDeleting,
			setup: func(w *workspacesv1.WorkspaceDeployment) { w.DeletionTimestamp = &now },
			want:  want{ready: "False", reconciling: "True", readyReason: commonv1.DeletingReason, keepsFailureContext: true}},
		{name: "suspended keeps what it had", phase: workspacesv1.PhaseWaiting,
			setup: func(w *workspacesv1.WorkspaceDeployment) {
				w.Spec.Suspend = true
				conditions.MarkTrue(w, commonv1.ReadyCondition, "Before", "x")
			},
			want: want{ready: "True", readyReason: "Before", keepsFailureContext: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			w := &workspacesv1.WorkspaceDeployment{}
			w.Status.Phase, w.Status.Message = tc.phase, "message"
			w.Status.FailureContext = &workspacesv1.FailureContext{Reason: "Earlier"}
			if tc.setup != nil {
				tc.setup(w)
			}
			Summarize(w, tc.err)
			statusOf := func(t string) string {
				if c := conditions.Get(w, t); c != nil {
					return string(c.Status)
				}
				return ""
			}
			g.Expect(statusOf(commonv1.ReadyCondition)).To(Equal(tc.want.ready), "Ready")
			g.Expect(statusOf(commonv1.ReconcilingCondition)).To(Equal(tc.want.reconciling), "Reconciling")
			g.Expect(statusOf(commonv1.StalledCondition)).To(Equal(tc.want.stalled), "Stalled")
			g.Expect(conditions.GetReason(w, commonv1.ReadyCondition)).To(Equal(tc.want.readyReason))
			g.Expect(w.Status.FailureContext != nil).To(Equal(tc.want.keepsFailureContext), "failure context")
		})
	}
}
