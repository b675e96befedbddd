package workspace

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// TestCrossNamespaceReferenceRefused checks the decision that a manager with
// --no-cross-namespace-refs (the default) makes before it reads anything.
func TestCrossNamespaceReferenceRefused(t *testing.T) {
	g := NewWithT(t)
	r := &Reconciler{NoCrossNamespaceRefs: true}
	obj := &workspacesv1.WorkspaceDeployment{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "tenant"}}
	obj.Spec.ClusterDeploymentRef = workspacesv1.ClusterDeploymentReference{Name: "c1", Namespace: "other"}
	res, err := r.resolveCluster(context.Background(), &workspaceRun{obj: obj})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.stop).To(BeTrue())
	g.Expect(obj.Status.Phase).To(Equal(workspacesv1.PhaseFailed))
	var reason string
	for _, c := range obj.Status.Conditions {
		if c.Type == workspacesv1.ClusterDeploymentResolvedCondition {
			reason = c.Reason
		}
		if c.Type == commonv1.StalledCondition {
			g.Expect(c.Message).To(ContainSubstring("cross-namespace"))
		}
	}
	g.Expect(reason).To(Equal(workspacesv1.CrossNamespaceRefDeniedReason))
}
