package controller_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// TestWorkspaceSteadyStateMakesNoRequests pokes a running workspace that has
// a values Secret: the reconcile it triggers reads everything from caches and
// writes nothing.
func TestWorkspaceSteadyStateMakesNoRequests(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "quiet")
	readyCluster(t, ns, "c1")
	serviceTemplate(t, ns, "tmpl", nil)
	workspaceClass(t, "q-"+ns, ns, "tmpl", func(c *workspacesv1.WorkspaceClass) {
		c.Spec.UserFacingConfig = []workspacesv1.UserFacingConfigField{{HelmValuePath: "password", DisplayName: "P", Type: workspacesv1.UserFacingConfigSecret}}
	})
	wsd := workspace(ns, "still", "q-"+ns, "c1")
	wsd.Spec.Values = rawJSON(`{"password":"hush"}`)
	g.Expect(env.Client.Create(ctx, wsd)).To(Succeed())
	w := eventuallyRunning(t, client.ObjectKeyFromObject(wsd))
	time.Sleep(2 * time.Second)

	before := requestsIn(ns)
	ss := serviceSetOf(g, w)
	patch := client.MergeFrom(ss.DeepCopy())
	ss.Labels["poke"] = "1"
	g.Expect(env.Client.Patch(ctx, ss, patch)).To(Succeed())
	g.Consistently(func() int { return requestsIn(ns) - before }, 3*time.Second, 200*time.Millisecond).Should(BeZero(),
		"a reconcile that changes nothing makes no API request")
}
