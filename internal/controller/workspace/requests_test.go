package workspace_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/apiaryhq/apiary/internal/controller/controllertest"
)

// Request budget of a workspace's happy path, from its creation to Running
// with the ServiceSet deployed, events included (docs/benchmarks.md).
const (
	managementRequestsPerWorkspace = 5
	childRequestsPerWorkspace      = 1
)

// TestWorkspaceHappyPathRequestBudget creates workspaces on a ready
// cluster, waits until every one is Running, and counts what Apiary asked
// of the management cluster (in the workspaces' namespace: the workspace,
// its status, its ServiceSet, its events) and of the child (the workspace's
// namespace) per workspace. Nothing else happens in that namespace, so every
// request counted is one the workspace's path made.
func TestWorkspaceHappyPathRequestBudget(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "budget")
	controllertest.ReadyCluster(t, ns, "c1")
	controllertest.ServiceTemplate(t, ns, "tmpl", nil)
	controllertest.WorkspaceClass(t, "budget-"+ns, ns, "tmpl", nil)
	time.Sleep(time.Second) // let the cluster's own reconciles pass

	const n = 10
	mark := controllertest.Requests.Mark()
	for i := range n {
		g.Expect(controllertest.Env.Client.Create(ctx, controllertest.NewWorkspace(ns, fmt.Sprintf("%s-w%d", ns, i), "budget-"+ns, "c1"))).To(Succeed())
	}
	for i := range n {
		controllertest.EventuallyRunning(t, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("%s-w%d", ns, i)})
	}
	time.Sleep(2 * time.Second) // anything still in flight is counted too

	mgmt := controllertest.Requests.Since(mark, func(r controllertest.APIRequest) bool { return r.Side == "management" && r.Namespace == ns })
	childNS := "ws-" + ns + "-w"
	childReqs := controllertest.Requests.Since(mark, func(r controllertest.APIRequest) bool {
		return r.Side == "child" && strings.HasPrefix(r.Namespace, childNS)
	})
	t.Logf("per %d workspaces: management %v; child %v", n, controllertest.Tally(mgmt), controllertest.Tally(childReqs))
	g.Expect(len(mgmt)).To(BeNumerically("<=", managementRequestsPerWorkspace*n),
		"management requests per workspace: %v", controllertest.Tally(mgmt))
	g.Expect(len(childReqs)).To(BeNumerically("<=", childRequestsPerWorkspace*n),
		"child requests per workspace: %v", controllertest.Tally(childReqs))
}

// A release deployed soon after its ServiceSet was created takes a new
// workspace from Pending to Running in one status write (holdFirstWrite);
// a release still on its way at the grace's end is written Deploying
// (TestWorkspaceDeployTimeout: PhaseWhenFailed is Deploying).
func TestWorkspaceFirstDeliveryIsOneStatusWrite(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "onewrite")
	controllertest.ReadyCluster(t, ns, "c1")
	controllertest.ServiceTemplate(t, ns, "instant", map[string]string{"standin.apiary.dev/instant": "true"})
	controllertest.WorkspaceClass(t, "onewrite-"+ns, ns, "instant", nil)
	time.Sleep(time.Second) // let the cluster's own reconciles pass

	mark := controllertest.Requests.Mark()
	w := controllertest.NewWorkspace(ns, ns+"-w", "onewrite-"+ns, "c1") // its child namespace is ws-<name>
	g.Expect(controllertest.Env.Client.Create(ctx, w)).To(Succeed())
	controllertest.EventuallyRunning(t, client.ObjectKeyFromObject(w))
	time.Sleep(2 * time.Second) // anything still in flight is counted too

	writes := controllertest.Requests.Since(mark, func(r controllertest.APIRequest) bool {
		return r.Side == "management" && r.Namespace == ns && r.Resource == "workspacedeployments/status"
	})
	// The stand-in stamps its states to the second: a release it reported
	// Deployed within 2 s of the ServiceSet's creation was deployed within
	// the grace. On a machine too busy for that, Deploying is written first.
	ss := controllertest.ServiceSetOf(g, controllertest.GetWorkspace(g, client.ObjectKeyFromObject(w)))
	g.Expect(ss.Status.Services).To(HaveLen(1))
	deployed := ss.Status.Services[0].LastStateTransitionTime
	g.Expect(deployed).NotTo(BeNil())
	if deployed.Sub(ss.CreationTimestamp.Time) <= 2*time.Second {
		g.Expect(writes).To(HaveLen(1), "status writes: %v", controllertest.Tally(writes))
	} else {
		t.Logf("the release took %s to deploy", deployed.Sub(ss.CreationTimestamp.Time))
		g.Expect(len(writes)).To(BeNumerically("<=", 2), "status writes: %v", controllertest.Tally(writes))
	}
}
