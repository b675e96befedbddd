package lifecycle

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// Only a waiting workspace that will claim what the queues hand it holds
// a place in them: not a suspended one, one asked to stop, or one being
// deleted (issue 30, item 5).
func TestClaimsPlace(t *testing.T) {
	g := NewWithT(t)
	waiting := func(mutate func(*workspacesv1.WorkspaceDeployment)) *workspacesv1.WorkspaceDeployment {
		w := &workspacesv1.WorkspaceDeployment{}
		w.Status.Phase = workspacesv1.PhaseWaiting
		w.Status.ResolvedResources = &workspacesv1.WorkspaceResourceSpec{}
		if mutate != nil {
			mutate(w)
		}
		return w
	}
	g.Expect(ClaimsPlace(waiting(nil))).To(BeTrue())
	g.Expect(ClaimsPlace(waiting(func(w *workspacesv1.WorkspaceDeployment) { w.Spec.Suspend = true }))).To(BeFalse())
	g.Expect(ClaimsPlace(waiting(func(w *workspacesv1.WorkspaceDeployment) {
		w.Spec.Lifecycle = &workspacesv1.WorkspaceLifecycle{Stopped: true}
	}))).To(BeFalse())
	g.Expect(ClaimsPlace(waiting(func(w *workspacesv1.WorkspaceDeployment) {
		now := metav1.Now()
		w.DeletionTimestamp = &now
	}))).To(BeFalse())
	g.Expect(ClaimsPlace(waiting(func(w *workspacesv1.WorkspaceDeployment) { w.Status.Phase = workspacesv1.PhasePending }))).To(BeFalse())
	g.Expect(ClaimsPlace(waiting(func(w *workspacesv1.WorkspaceDeployment) { w.Status.ResolvedResources = nil }))).To(BeFalse())
}
