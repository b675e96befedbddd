package reconciler

import (
	"context"
	"testing"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/testenv"
)

const testFinalizer = "test.apiary.dev/finalizer"

// TestObjectPatcherWritesStatusAndMetadataOfOneReconcile changes the status
// and the metadata of an object in one patch, against a control plane of its
// own: both reach the server. Removing the last finalizer of an object being
// deleted, in the reconcile that also writes its final status, deletes it;
// the status request's answer must not bring the finalizer back.
func TestObjectPatcherWritesStatusAndMetadataOfOneReconcile(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	g := NewWithT(t)
	ctx := context.Background()
	env, err := testenv.Start(testenv.WithoutK0rdentCRDs())
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	c := env.Client
	ns := env.NewNamespace(t, "patcher")

	w := &workspacesv1.WorkspaceDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"},
		Spec: workspacesv1.WorkspaceDeploymentSpec{WorkspaceClassRef: "c",
			ClusterDeploymentRef: workspacesv1.ClusterDeploymentReference{Name: "cd"}}}
	g.Expect(c.Create(ctx, w)).To(Succeed())
	p := NewPatcher(c, w)
	g.Expect(EnsureFinalizer(ctx, p, w, testFinalizer)).To(Succeed())

	// Status and a label in one patch.
	p = NewPatcher(c, w)
	w.Status.Phase = workspacesv1.PhasePending
	conditions.MarkUnknown(w, commonv1.ReadyCondition, "Pending", "first")
	w.Labels = map[string]string{"tier": "gold"}
	g.Expect(p.Patch(ctx, w, false)).To(Succeed())
	got := &workspacesv1.WorkspaceDeployment{}
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(w), got)).To(Succeed())
	g.Expect(got.Status.Phase).To(Equal(workspacesv1.PhasePending))
	g.Expect(got.Labels).To(HaveKeyWithValue("tier", "gold"))
	g.Expect(got.Finalizers).To(ContainElement(testFinalizer))

	// Deleted: the last reconcile writes its status and drops the finalizer.
	g.Expect(c.Delete(ctx, got)).To(Succeed())
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(w), got)).To(Succeed())
	p = NewPatcher(c, got)
	got.Status.Phase = workspacesv1.PhaseDeleting
	conditions.MarkFalse(got, commonv1.ReadyCondition, "Deleting", "last")
	controllerutil.RemoveFinalizer(got, testFinalizer)
	g.Expect(p.Patch(ctx, got, false)).To(Succeed())
	err = c.Get(ctx, client.ObjectKeyFromObject(w), &workspacesv1.WorkspaceDeployment{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the object is gone once its finalizer is removed: %v", err)
}
