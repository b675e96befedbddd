package controller_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/controllertest"
)

// TestWorkspaceSteadyStateMakesNoRequests pokes a running workspace that has
// a values Secret: the reconcile it triggers reads everything from caches and
// writes nothing.
func TestWorkspaceSteadyStateMakesNoRequests(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "quiet")
	controllertest.ReadyCluster(t, ns, "c1")
	controllertest.ServiceTemplate(t, ns, "tmpl", nil)
	controllertest.WorkspaceClass(t, "q-"+ns, ns, "tmpl", func(c *workspacesv1.WorkspaceClass) {
		c.Spec.UserFacingConfig = []workspacesv1.UserFacingConfigField{{HelmValuePath: "password", DisplayName: "P", Type: workspacesv1.UserFacingConfigSecret}}
	})
	wsd := controllertest.NewWorkspace(ns, "still", "q-"+ns, "c1")
	wsd.Spec.Values = controllertest.RawJSON(`{"password":"hush"}`)
	g.Expect(controllertest.Env.Client.Create(ctx, wsd)).To(Succeed())
	w := controllertest.EventuallyRunning(t, client.ObjectKeyFromObject(wsd))
	time.Sleep(2 * time.Second)

	before := controllertest.RequestsIn(ns)
	ss := controllertest.ServiceSetOf(g, w)
	patch := client.MergeFrom(ss.DeepCopy())
	ss.Labels["poke"] = "1"
	g.Expect(controllertest.Env.Client.Patch(ctx, ss, patch)).To(Succeed())
	g.Consistently(func() int { return controllertest.RequestsIn(ns) - before }, 3*time.Second, 200*time.Millisecond).Should(BeZero(),
		"a reconcile that changes nothing makes no API request")
}
