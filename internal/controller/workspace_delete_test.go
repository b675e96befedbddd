package controller_test

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
)

// TestWorkspaceDeletionRemovesAServiceSetMissingFromItsInventory plays a
// manager killed after it applied a workspace's ServiceSet and before it
// recorded it in status.delivery.inventory: deleting the workspace must
// still remove the ServiceSet, not leave it orphaned. (Found by test/crash.)
func TestWorkspaceDeletionRemovesAServiceSetMissingFromItsInventory(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "orphan")
	readyCluster(t, ns, "c1")
	serviceTemplate(t, ns, "tmpl", nil)
	workspaceClass(t, "o-"+ns, ns, "tmpl", nil)
	wsd := workspace(ns, "lost", "o-"+ns, "c1")
	g.Expect(env.Client.Create(ctx, wsd)).To(Succeed())
	key := client.ObjectKeyFromObject(wsd)
	w := eventuallyRunning(t, key)
	g.Eventually(func(g Gomega) { serviceSetOf(g, w) }).WithTimeout(timeout).Should(Succeed())

	// Suspended, the workspace is left alone; its inventory then loses the
	// ServiceSet, as when the manager died before recording it.
	g.Expect(env.Client.Patch(ctx, w, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":true}}`)))).To(Succeed())
	g.Eventually(func(g Gomega) {
		cur := getWorkspace(g, key)
		g.Expect(env.Client.Status().Patch(ctx, cur, client.RawPatch(types.MergePatchType,
			[]byte(`{"status":{"delivery":{"inventory":null}}}`)))).To(Succeed())
		cur = getWorkspace(g, key)
		g.Expect(cur.Status.Delivery == nil || cur.Status.Delivery.Inventory == nil).To(BeTrue())
	}).WithTimeout(timeout).Should(Succeed())
	time.Sleep(time.Second) // let a reconcile of the suspension pass
	g.Expect(getWorkspace(g, key).Status.Delivery.Inventory).To(BeNil())

	g.Expect(env.Client.Delete(ctx, w)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, key, &workspacesv1.WorkspaceDeployment{}))
	}).WithTimeout(timeout).Should(BeTrue(), "the workspace is gone")
	g.Eventually(func() bool {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "wsd-c1-lost"}, &k0rdentv1beta1.ServiceSet{})
		return apierrors.IsNotFound(err)
	}).WithTimeout(timeout).Should(BeTrue(), "the ServiceSet went with its workspace")
}
