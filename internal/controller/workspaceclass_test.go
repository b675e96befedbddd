package controller_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

func TestWorkspaceClassDeletionWaitsForItsWorkspaces(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "inuse")
	readyCluster(t, ns, "c1")
	serviceTemplate(t, ns, "tmpl", nil)
	class := workspaceClass(t, "held-"+ns, ns, "tmpl", nil)
	wsd := workspace(ns, "holder", class.Name, "c1")
	g.Expect(env.Client.Create(ctx, wsd)).To(Succeed())
	eventuallyRunning(t, client.ObjectKeyFromObject(wsd))

	g.Expect(env.Client.Delete(ctx, class)).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := &workspacesv1.WorkspaceClass{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(class), c)).To(Succeed())
		ready := condition(c, commonv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal(workspacesv1.ClassInUseReason))
		g.Expect(ready.Message).To(ContainSubstring(ns + "/holder"))
	}, timeout, 200*time.Millisecond).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(getWorkspace(g, client.ObjectKeyFromObject(wsd)).Status.Phase).To(Equal(workspacesv1.PhaseRunning))
	}, time.Second, 200*time.Millisecond).Should(Succeed(), "the workspace keeps running on its class")

	g.Expect(env.Client.Delete(ctx, wsd)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(class), &workspacesv1.WorkspaceClass{}))
	}, timeout, 200*time.Millisecond).Should(BeTrue(), "the class goes with its last workspace")
}
