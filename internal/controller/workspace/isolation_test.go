package workspace_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/controllertest"
)

// TestWorkspaceNamespaceCollisionIsRefused deploys two workspaces of the same
// name from two namespaces onto clusters that share one child: the second
// would land in the first's ws-<name> namespace, and is refused, not adopted.
func TestWorkspaceNamespaceCollisionIsRefused(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	nsA, nsB := controllertest.Env.NewNamespace(t, "team-a"), controllertest.Env.NewNamespace(t, "team-b")
	controllertest.ReadyCluster(t, nsA, "c1")
	controllertest.ReadyCluster(t, nsB, "c1")
	controllertest.ServiceTemplate(t, nsA, "tmpl", nil)
	controllertest.ServiceTemplate(t, nsB, "tmpl", nil)
	class := controllertest.WorkspaceClass(t, "twin-"+nsA, nsA, "tmpl", nil)
	name := "twin-" + nsA[len(nsA)-5:]
	first := controllertest.NewWorkspace(nsA, name, class.Name, "c1")
	g.Expect(controllertest.Env.Client.Create(ctx, first)).To(Succeed())
	controllertest.EventuallyRunning(t, client.ObjectKeyFromObject(first))

	second := controllertest.NewWorkspace(nsB, name, class.Name, "c1")
	g.Expect(controllertest.Env.Client.Create(ctx, second)).To(Succeed())
	w := controllertest.EventuallyPhase(t, client.ObjectKeyFromObject(second), workspacesv1.PhaseFailed)
	g.Expect(w.Status.FailureContext.Reason).To(Equal(workspacesv1.NamespaceConflictReason))
	g.Expect(w.Status.Message).To(ContainSubstring(nsA))
	g.Expect(controllertest.GetWorkspace(g, client.ObjectKeyFromObject(first)).Status.Phase).To(Equal(workspacesv1.PhaseRunning),
		"the first workspace keeps its namespace")
}

// TestWorkspaceCrossNamespaceReferenceAllowed targets a ClusterDeployment in
// another namespace; the test manager allows it (--no-cross-namespace-refs=false).
func TestWorkspaceCrossNamespaceReferenceAllowed(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	clusters, tenant := controllertest.Env.NewNamespace(t, "clusters"), controllertest.Env.NewNamespace(t, "tenant")
	controllertest.ReadyCluster(t, clusters, "shared")
	controllertest.ServiceTemplate(t, clusters, "tmpl", nil)
	class := controllertest.WorkspaceClass(t, "x-"+tenant, clusters, "tmpl", nil)
	w := controllertest.NewWorkspace(tenant, "visitor-"+tenant[len(tenant)-5:], class.Name, "shared")
	w.Spec.ClusterDeploymentRef.Namespace = clusters
	g.Expect(controllertest.Env.Client.Create(ctx, w)).To(Succeed())
	got := controllertest.EventuallyRunning(t, client.ObjectKeyFromObject(w))
	g.Expect(controllertest.ServiceSetOf(g, got).Namespace).To(Equal(clusters), "the ServiceSet lives beside its ClusterDeployment")
}
