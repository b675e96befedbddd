package gitops_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/access"
	"github.com/apiaryhq/apiary/internal/delivery"
	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/test/standin"
	"github.com/apiaryhq/apiary/test/world/builder"
)

// routesPath is the folder of the workspaces' routes: <apiaryPath>-routes.
const routesPath = apiaryPath + "-routes"

const tenantDomain = "tenant.example.com"

var gateway = types.NamespacedName{Namespace: access.DefaultGatewayNamespace, Name: access.DefaultGatewayName}

// TestWorkspaceRoutesThroughGit publishes a workspace's HTTP and SSH
// endpoints in Git mode: the routes are committed to the regional
// cluster's folder, the Flux Kustomization that applies them (with the
// regional cluster's kubeconfig) is committed to Apiary's folder, Flux
// creates it and applies the routes to the regional cluster, where the
// Gateway accepts them, and the workspace shows its URLs. Deleting the
// workspace removes the files, Flux prunes the routes, and the workspace
// goes.
func TestWorkspaceRoutesThroughGit(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "gitops-routes")
	// Every cluster of the suite is the one child control plane, whose
	// namespaces never finish terminating: workspace names are unique.
	k0rdentFixtures(t, ns)
	readyCluster(t, ns, "regional", map[string]string{access.ClusterNameLabel: "region-1", access.ClusterRoleLabel: access.RoleRegional},
		map[string]string{regionalAnnotation: "true"})
	readyCluster(t, ns, "gpu", map[string]string{access.RegionalClusterNameLabel: "region-1"}, nil)
	// The routes of a workspace deleted while Apiary was away are in the
	// regional cluster's folder: swept once its sink opens.
	folder := routesPath + "/" + ns + "/regional/"
	ghost := folder + "ws-ghost/httproute/web.yaml"
	_, err := gitServer.Commit(repoName, branch, "routes of a workspace that is gone", map[string][]byte{ghost: []byte(
		"apiVersion: gateway.networking.k8s.io/v1\nkind: HTTPRoute\nmetadata:\n  name: web\n  namespace: ws-ghost\n  labels:\n" +
			"    " + delivery.LabelOwnerKind + ": WorkspaceRoutes\n    " + delivery.LabelOwnerNamespace + ": " + ns + "\n" +
			"    " + delivery.LabelOwnerName + ": ghost\nspec:\n  hostnames: [ghost." + tenantDomain + "]\n")})
	g.Expect(err).NotTo(HaveOccurred())

	class := builder.NewClass(ns, "routed", builder.Named("routed-"+ns), builder.WithEndpoints(
		workspacesv1.AccessEndpoint{Name: "web", Protocol: workspacesv1.AccessProtocolHTTP, Port: 8888},
		workspacesv1.AccessEndpoint{Name: "ssh", Protocol: workspacesv1.AccessProtocolSSH, Port: 22},
	))
	g.Expect(env.Client.Create(ctx, class)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), class) })
	w := builder.Workspace(ns, "routed", class.Name, "gpu")
	g.Expect(env.Client.Create(ctx, w)).To(Succeed())
	w = eventuallyTrue(t, w, commonv1.SyncedCondition, commonv1.ReadyCondition)
	g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseRunning))

	// Git holds the routes in the regional cluster's folder, and the
	// Kustomization that applies them in Apiary's folder; the ghost is gone.
	g.Eventually(func() string { return headFile(t, folder+"ws-routed/httproute/web.yaml") }, timeout, 250*time.Millisecond).
		Should(ContainSubstring("routed." + tenantDomain))
	g.Expect(headFile(t, folder+"ws-routed/tcproute/ssh.yaml")).To(ContainSubstring("sectionName: ssh-0"))
	g.Expect(headFile(t, folder+"_cluster/namespace/ws-routed.yaml")).NotTo(BeEmpty())
	g.Expect(headFile(t, folder+"kustomization.yaml")).To(ContainSubstring("ws-routed"))
	g.Expect(headFile(t, ghost)).To(BeEmpty(), "the routes of a workspace that is gone were swept")
	g.Expect(headFile(t, folder+"kustomization.yaml")).NotTo(ContainSubstring("ws-ghost"))
	ks := headFile(t, objectFile(ns, "kustomization", "apiary-routes-regional"))
	g.Expect(ks).To(ContainSubstring("path: ./" + routesPath + "/" + ns + "/regional"))
	g.Expect(ks).To(ContainSubstring("name: regional-kubeconfig"))
	g.Expect(ks).To(ContainSubstring("prune: true"))

	// Flux applied the routes to the regional cluster, not Apiary.
	route := &gatewayv1.HTTPRoute{}
	g.Eventually(func() error {
		return regionalClient.Get(ctx, client.ObjectKey{Namespace: "ws-routed", Name: "web"}, route)
	}, timeout, 250*time.Millisecond).Should(Succeed())
	g.Expect(route.Labels).To(HaveKeyWithValue("kustomize.toolkit.fluxcd.io/name", "apiary-routes-regional"))
	g.Expect(route.Labels).To(HaveKeyWithValue(delivery.LabelOwnerKind, "WorkspaceRoutes"))

	// Not ready until the Gateway accepts them; then the URLs are live.
	w = eventuallyReason(t, w, workspacesv1.RoutesReadyCondition, workspacesv1.RoutingInProgressReason)
	g.Expect(w.Status.Access).To(ContainElement(HaveField("URL", "https://routed."+tenantDomain)))
	g.Eventually(func() error { return testenv.AcceptRoutes(ctx, regionalClient, gateway, "ws-routed") }, timeout, 250*time.Millisecond).Should(Succeed())
	w = eventuallyTrue(t, w, workspacesv1.RoutesReadyCondition)
	g.Expect(w.Status.Access).To(ConsistOf(
		And(HaveField("Name", "web"), HaveField("URL", "https://routed."+tenantDomain), HaveField("Ready", true)),
		And(HaveField("Name", "ssh"), HaveField("URL", "ssh://"+tenantDomain+":30022"), HaveField("Ready", true)),
	))
	d := w.Status.Routes.Delivery
	g.Expect(d.Mode).To(Equal(delivery.ModeGit))
	g.Expect(d.Revision).NotTo(BeEmpty())
	g.Expect(d.SyncedCommit).To(Equal(d.Revision))

	// Deletion removes the files; Flux prunes the routes; the workspace goes.
	g.Expect(env.Client.Delete(ctx, w)).To(Succeed())
	eventuallyGone(t, w)
	g.Expect(headFile(t, folder+"ws-routed/httproute/web.yaml")).To(BeEmpty())
	g.Expect(headFile(t, folder+"ws-routed/tcproute/ssh.yaml")).To(BeEmpty())
	err = regionalClient.Get(ctx, client.ObjectKey{Namespace: "ws-routed", Name: "web"}, &gatewayv1.HTTPRoute{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the HTTPRoute was pruned: %v", err)
	g.Eventually(func() bool {
		err := regionalClient.Get(ctx, client.ObjectKey{Namespace: "ws-routed", Name: "ssh"}, &gatewayv1.TCPRoute{})
		return apierrors.IsNotFound(err)
	}, timeout, 250*time.Millisecond).Should(BeTrue(), "the TCPRoute was pruned")
}

// readyCluster creates a ClusterDeployment, as an administrator or k0rdent
// would, and waits until the stand-in made it ready with its kubeconfig.
func readyCluster(t *testing.T, ns, name string, labels, annotations map[string]string) {
	t.Helper()
	ctx := context.Background()
	cd := standin.NewClusterDeployment(ns, name, "exalsius-remote-cluster-0-1-5", "remote-cred")
	cd.Labels, cd.Annotations = labels, annotations
	NewWithT(t).Expect(env.Client.Create(ctx, cd)).To(Succeed())
	NewWithT(t).Eventually(func(g Gomega) {
		got := &k0rdentv1beta1.ClusterDeployment{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(cd), got)).To(Succeed())
		var ready bool
		for _, c := range got.Status.Conditions {
			ready = ready || c.Type == k0rdentv1beta1.ReadyCondition && c.Status == metav1.ConditionTrue
		}
		g.Expect(ready).To(BeTrue(), "ClusterDeployment %s is ready", name)
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: standin.KubeconfigSecretName(name)}, &corev1.Secret{})).To(Succeed())
	}, timeout, 200*time.Millisecond).Should(Succeed())
}
