package gitops_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/access"
	"github.com/apiaryhq/apiary/test/world/builder"
)

// routedWorkspace sets up a regional cluster "region" and a child "gpu"
// in ns, and a workspace with one HTTP endpoint on the child, and waits
// until Git holds its routes in the regional cluster's folder and the
// Kustomization that applies them, and Flux applied them there. It returns
// the workspace and the regional cluster's folder.
func routedWorkspace(t *testing.T, ns, name string) (*workspacesv1.WorkspaceDeployment, string) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	k0rdentFixtures(t, ns)
	readyCluster(t, ns, "region", map[string]string{access.ClusterNameLabel: "region-" + name, access.ClusterRoleLabel: access.RoleRegional},
		map[string]string{regionalAnnotation: "true"})
	readyCluster(t, ns, "gpu", map[string]string{access.RegionalClusterNameLabel: "region-" + name}, nil)
	class := builder.NewClass(ns, name, builder.Named(name+"-"+ns),
		builder.WithEndpoints(workspacesv1.AccessEndpoint{Name: "web", Protocol: workspacesv1.AccessProtocolHTTP, Port: 8888}))
	g.Expect(env.Client.Create(ctx, class)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), class) })
	w := builder.Workspace(ns, name, class.Name, "gpu")
	g.Expect(env.Client.Create(ctx, w)).To(Succeed())
	folder := routesPath + "/" + ns + "/region/"
	g.Eventually(func() string { return headFile(t, folder+"ws-"+name+"/httproute/web.yaml") }, timeout, 250*time.Millisecond).
		Should(ContainSubstring(name + "." + tenantDomain))
	g.Expect(headFile(t, objectFile(ns, "kustomization", "apiary-routes-region"))).To(ContainSubstring("name: region-kubeconfig"))
	g.Eventually(func() error {
		return regionalClient.Get(ctx, client.ObjectKey{Namespace: "ws-" + name, Name: "web"}, &gatewayv1.HTTPRoute{})
	}, timeout, 250*time.Millisecond).Should(Succeed(), "Flux applied the routes to the regional cluster")
	return w, folder
}

// routesKustomization is the Flux Kustomization of the regional cluster
// "region" in ns.
func routesKustomization(ns string) *unstructured.Unstructured {
	ks := &unstructured.Unstructured{}
	ks.SetAPIVersion("kustomize.toolkit.fluxcd.io/v1")
	ks.SetKind("Kustomization")
	ks.SetNamespace(ns)
	ks.SetName("apiary-routes-region")
	return ks
}

// expectRegionalGoneFromGit waits until the branch holds nothing of the
// regional cluster "region" of ns: no file in its folder, no file of its
// Kustomization; and until Flux pruned that Kustomization.
func expectRegionalGoneFromGit(t *testing.T, ns, folder string) {
	t.Helper()
	g := NewWithT(t)
	g.Eventually(func(g Gomega) {
		g.Expect(headFile(t, objectFile(ns, "kustomization", "apiary-routes-region"))).To(BeEmpty())
		tree, err := history(t)[0].Tree()
		g.Expect(err).NotTo(HaveOccurred())
		_, err = tree.Tree(strings.TrimSuffix(folder, "/"))
		g.Expect(err).To(HaveOccurred(), "the folder %s is gone", folder)
	}, timeout, 250*time.Millisecond).Should(Succeed())
	eventuallyGone(t, routesKustomization(ns))

	// The Kustomization's file left first; the folder in a later commit.
	for _, c := range history(t) {
		if !strings.Contains(c.Message, "Removed "+strings.TrimSuffix(folder, "/")) {
			continue
		}
		parent, err := c.Parent(0)
		g.Expect(err).NotTo(HaveOccurred())
		_, err = parent.File(objectFile(ns, "kustomization", "apiary-routes-region"))
		g.Expect(err).To(HaveOccurred(), "the Kustomization's file was removed before the folder")
		return
	}
	t.Fatalf("no commit removed %s", folder)
}

// TestRegionalClusterDeletedRemovesItsGitFolder deletes a regional
// ClusterDeployment while a workspace's routes are committed there: the
// workspace lets its routes go, then the Kustomization's file leaves
// Apiary's folder (Flux prunes the Kustomization) and the regional
// cluster's folder leaves the repository.
func TestRegionalClusterDeletedRemovesItsGitFolder(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "gitops-regional")
	w, folder := routedWorkspace(t, ns, "unrouted")

	cd := &k0rdentv1beta1.ClusterDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "region"}}
	g.Expect(env.Client.Delete(ctx, cd)).To(Succeed())
	expectRegionalGoneFromGit(t, ns, folder)
	eventuallyGone(t, cd)
	w = eventuallyReason(t, w, workspacesv1.RoutesReadyCondition, workspacesv1.RoutingInfraNotReadyReason)
	g.Expect(w.Status.Routes).To(BeNil())

	g.Expect(env.Client.Delete(ctx, w)).To(Succeed())
	eventuallyGone(t, w)
}

// TestRegionalClusterDeletedWhileApiaryIsDownIsSweptAtStart deletes a
// regional ClusterDeployment while the manager is stopped: the sweep at
// start finds its folder and its Kustomization's file and removes them.
func TestRegionalClusterDeletedWhileApiaryIsDownIsSweptAtStart(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "gitops-regional-restart")
	w, folder := routedWorkspace(t, ns, "restarted")

	g.Expect(apiary.Stop()).To(Succeed())
	cd := &k0rdentv1beta1.ClusterDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "region"}}
	g.Expect(env.Client.Delete(ctx, cd)).To(Succeed())
	eventuallyGone(t, cd)
	g.Expect(headFile(t, folder+"ws-restarted/httproute/web.yaml")).NotTo(BeEmpty(), "nothing removed it while Apiary was down")
	apiary.Start()

	expectRegionalGoneFromGit(t, ns, folder)
	g.Expect(env.Client.Delete(ctx, w)).To(Succeed())
	eventuallyGone(t, w)
}
