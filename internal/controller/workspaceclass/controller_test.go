package workspaceclass_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/controllertest"
)

func TestWorkspaceClassDeletionWaitsForItsWorkspaces(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "inuse")
	controllertest.ReadyCluster(t, ns, "c1")
	controllertest.ServiceTemplate(t, ns, "tmpl", nil)
	class := controllertest.WorkspaceClass(t, "held-"+ns, ns, "tmpl", nil)
	wsd := controllertest.NewWorkspace(ns, "holder", class.Name, "c1")
	g.Expect(controllertest.Env.Client.Create(ctx, wsd)).To(Succeed())
	controllertest.EventuallyRunning(t, client.ObjectKeyFromObject(wsd))

	g.Expect(controllertest.Env.Client.Delete(ctx, class)).To(Succeed())
	g.Eventually(func(g Gomega) {
		c := &workspacesv1.WorkspaceClass{}
		g.Expect(controllertest.Env.Client.Get(ctx, client.ObjectKeyFromObject(class), c)).To(Succeed())
		ready := controllertest.Condition(c, commonv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal(workspacesv1.ClassInUseReason))
		g.Expect(ready.Message).To(ContainSubstring(ns + "/holder"))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(controllertest.GetWorkspace(g, client.ObjectKeyFromObject(wsd)).Status.Phase).To(Equal(workspacesv1.PhaseRunning))
	}, time.Second, 200*time.Millisecond).Should(Succeed(), "the workspace keeps running on its class")

	g.Expect(controllertest.Env.Client.Delete(ctx, wsd)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(controllertest.Env.Client.Get(ctx, client.ObjectKeyFromObject(class), &workspacesv1.WorkspaceClass{}))
	}, controllertest.Timeout, 200*time.Millisecond).Should(BeTrue(), "the class goes with its last workspace")
}
