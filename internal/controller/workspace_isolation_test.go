package controller_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// TestWorkspaceNamespaceCollisionIsRefused deploys two workspaces of the same
// name from two namespaces onto clusters that share one child: the second
// would land in the first's ws-<name> namespace, and is refused, not adopted.
func TestWorkspaceNamespaceCollisionIsRefused(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	nsA, nsB := env.NewNamespace(t, "team-a"), env.NewNamespace(t, "team-b")
	readyCluster(t, nsA, "c1")
	readyCluster(t, nsB, "c1")
	serviceTemplate(t, nsA, "tmpl", nil)
	serviceTemplate(t, nsB, "tmpl", nil)
	class := workspaceClass(t, "twin-"+nsA, nsA, "tmpl", nil)
	name := "twin-" + nsA[len(nsA)-5:]
	first := workspace(nsA, name, class.Name, "c1")
	g.Expect(env.Client.Create(ctx, first)).To(Succeed())
	eventuallyRunning(t, client.ObjectKeyFromObject(first))

	second := workspace(nsB, name, class.Name, "c1")
	g.Expect(env.Client.Create(ctx, second)).To(Succeed())
	w := eventuallyPhase(t, client.ObjectKeyFromObject(second), workspacesv1.PhaseFailed)
	g.Expect(w.Status.FailureContext.Reason).To(Equal(workspacesv1.NamespaceConflictReason))
	g.Expect(w.Status.Message).To(ContainSubstring(nsA))
	g.Expect(getWorkspace(g, client.ObjectKeyFromObject(first)).Status.Phase).To(Equal(workspacesv1.PhaseRunning),
		"the first workspace keeps its namespace")
}

// TestWorkspaceCrossNamespaceReferenceAllowed targets a ClusterDeployment in
// another namespace; the test manager allows it (--no-cross-namespace-refs=false).
func TestWorkspaceCrossNamespaceReferenceAllowed(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	clusters, tenant := env.NewNamespace(t, "clusters"), env.NewNamespace(t, "tenant")
	readyCluster(t, clusters, "shared")
	serviceTemplate(t, clusters, "tmpl", nil)
	class := workspaceClass(t, "x-"+tenant, clusters, "tmpl", nil)
	w := workspace(tenant, "visitor-"+tenant[len(tenant)-5:], class.Name, "shared")
	w.Spec.ClusterDeploymentRef.Namespace = clusters
	g.Expect(env.Client.Create(ctx, w)).To(Succeed())
	got := eventuallyRunning(t, client.ObjectKeyFromObject(w))
	g.Expect(serviceSetOf(g, got).Namespace).To(Equal(clusters), "the ServiceSet lives beside its ClusterDeployment")
}
