package workspace_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/controllertest"
)

// TestWorkspaceDeletionRemovesAServiceSetMissingFromItsInventory plays a
// manager killed after it applied a workspace's ServiceSet and before it
// recorded it in status.delivery.inventory: deleting the workspace must
// still remove the ServiceSet, not leave it orphaned. (Found by test/crash.)
func TestWorkspaceDeletionRemovesAServiceSetMissingFromItsInventory(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "orphan")
	controllertest.ReadyCluster(t, ns, "c1")
	controllertest.ServiceTemplate(t, ns, "tmpl", nil)
	controllertest.WorkspaceClass(t, "o-"+ns, ns, "tmpl", nil)
	wsd := controllertest.NewWorkspace(ns, "lost", "o-"+ns, "c1")
	g.Expect(controllertest.Env.Client.Create(ctx, wsd)).To(Succeed())
	key := client.ObjectKeyFromObject(wsd)
	w := controllertest.EventuallyRunning(t, key)
	g.Eventually(func(g Gomega) { controllertest.ServiceSetOf(g, w) }).WithTimeout(controllertest.Timeout).Should(Succeed())

	// Suspended, the workspace is left alone; its inventory then loses the
	// ServiceSet, as when the manager died before recording it.
	g.Expect(controllertest.Env.Client.Patch(ctx, w, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":true}}`)))).To(Succeed())
	g.Eventually(func(g Gomega) {
		cur := controllertest.GetWorkspace(g, key)
		g.Expect(controllertest.Env.Client.Status().Patch(ctx, cur, client.RawPatch(types.MergePatchType,
			[]byte(`{"status":{"delivery":{"inventory":null}}}`)))).To(Succeed())
		cur = controllertest.GetWorkspace(g, key)
		g.Expect(cur.Status.Delivery == nil || cur.Status.Delivery.Inventory == nil).To(BeTrue())
	}).WithTimeout(controllertest.Timeout).Should(Succeed())
	time.Sleep(time.Second) // let a reconcile of the suspension pass
	g.Expect(controllertest.GetWorkspace(g, key).Status.Delivery.Inventory).To(BeNil())

	g.Expect(controllertest.Env.Client.Delete(ctx, w)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(controllertest.Env.Client.Get(ctx, key, &workspacesv1.WorkspaceDeployment{}))
	}).WithTimeout(controllertest.Timeout).Should(BeTrue(), "the workspace is gone")
	g.Eventually(func() bool {
		err := controllertest.Env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "wsd-c1-lost"}, &k0rdentv1beta1.ServiceSet{})
		return apierrors.IsNotFound(err)
	}).WithTimeout(controllertest.Timeout).Should(BeTrue(), "the ServiceSet went with its workspace")
}
