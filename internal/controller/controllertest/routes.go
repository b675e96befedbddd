package controllertest

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/access"
	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/test/standin"
	"github.com/apiaryhq/apiary/test/world"
)

// The tenant Gateway every regional cluster of the tests shares: a wildcard
// HTTPS listener and a pool of two TCP listeners.
const (
	TenantDomain         = "tenant.example.com"
	PoolPort0, PoolPort1 = 30022, 30023
)

var (
	// GatewayClient reaches the regional control plane with the Gateway
	// API's types.
	GatewayClient client.Client
	gatewayOnce   sync.Once
)

// RegionalClient reaches the regional control plane with the Gateway API's types.
func RegionalClient(t *testing.T) client.Client {
	t.Helper()
	return GatewayClient
}

// tenantGateway creates the tenant Gateway once and reports it Programmed,
// as the gateway controller would.
func tenantGateway(t *testing.T) {
	t.Helper()
	gatewayOnce.Do(func() {
		gw := testenv.TenantGateway{Key: defaultGateway, Domain: TenantDomain, Pool: map[string]int32{"ssh-0": PoolPort0, "ssh-1": PoolPort1}}
		if err := gw.Create(context.Background(), RegionalClient(t)); err != nil {
			t.Fatal(err)
		}
	})
}

var defaultGateway = types.NamespacedName{Namespace: access.DefaultGatewayNamespace, Name: access.DefaultGatewayName}

// KOFCluster creates a ClusterDeployment the stand-in makes ready, with
// labels and annotations, and waits for it and its kubeconfig Secret.
func KOFCluster(t *testing.T, ns, name string, labels, annotations map[string]string) {
	t.Helper()
	ctx := context.Background()
	K0rdentFixturesOnce(t, ns)
	cd := standin.NewClusterDeployment(ns, name, "exalsius-remote-cluster-0-1-5", "remote-cred")
	cd.Labels, cd.Annotations = labels, annotations
	if err := Env.Client.Create(ctx, cd); err != nil {
		t.Fatalf("creating ClusterDeployment: %v", err)
	}
	NewWithT(t).Eventually(func(g Gomega) {
		got := &k0rdentv1beta1.ClusterDeployment{}
		g.Expect(Env.Client.Get(ctx, client.ObjectKeyFromObject(cd), got)).To(Succeed())
		g.Expect(Condition(got, k0rdentv1beta1.ReadyCondition)).NotTo(BeNil())
		g.Expect(Condition(got, k0rdentv1beta1.ReadyCondition).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(Env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: standin.KubeconfigSecretName(name)}, &corev1.Secret{})).To(Succeed())
	}, Timeout, 200*time.Millisecond).Should(Succeed())
}

// RegionalSetup makes, in ns, a regional ClusterDeployment "regional" on the
// regional control plane (kof name "region-1") with the tenant Gateway, and
// a child cluster of it named child.
func RegionalSetup(t *testing.T, ns, child string) {
	t.Helper()
	tenantGateway(t)
	KOFCluster(t, ns, "regional", map[string]string{access.ClusterNameLabel: "region-1", access.ClusterRoleLabel: access.RoleRegional},
		map[string]string{world.RegionalAnnotation: "true"})
	KOFCluster(t, ns, child, map[string]string{access.RegionalClusterNameLabel: "region-1"}, nil)
}

// AccessClass creates a ServiceTemplate and a class exposing endpoints.
func AccessClass(t *testing.T, ns, name string, endpoints ...workspacesv1.AccessEndpoint) *workspacesv1.WorkspaceClass {
	t.Helper()
	ServiceTemplate(t, ns, name+"-tmpl", nil)
	return WorkspaceClass(t, name+"-"+ns, ns, name+"-tmpl", func(c *workspacesv1.WorkspaceClass) {
		c.Spec.AccessEndpoints = endpoints
	})
}

// Endpoint is an access endpoint of a class.
func Endpoint(name string, protocol workspacesv1.AccessProtocol, port int32) workspacesv1.AccessEndpoint {
	return workspacesv1.AccessEndpoint{Name: name, Protocol: protocol, Port: port}
}

// CreateWorkspace creates a workspace and, when the test ends, deletes it
// and waits until it is gone, so that its pool ports are free again.
func CreateWorkspace(t *testing.T, w *workspacesv1.WorkspaceDeployment) client.ObjectKey {
	t.Helper()
	ctx := context.Background()
	if err := Env.Client.Create(ctx, w); err != nil {
		t.Fatalf("creating workspace: %v", err)
	}
	key := client.ObjectKeyFromObject(w)
	t.Cleanup(func() { DeleteWorkspace(t, key) })
	return key
}

// DeleteWorkspace deletes a workspace and waits until it is gone.
func DeleteWorkspace(t *testing.T, key client.ObjectKey) {
	t.Helper()
	ctx := context.Background()
	_ = Env.Client.Delete(ctx, &workspacesv1.WorkspaceDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}})
	NewWithT(t).Eventually(func() bool {
		return apierrors.IsNotFound(Env.Client.Get(ctx, key, &workspacesv1.WorkspaceDeployment{}))
	}, Timeout, 200*time.Millisecond).Should(BeTrue(), "workspace %s is not gone", key)
}

// AccessEntry returns a workspace's access entry of an endpoint.
func AccessEntry(g Gomega, w *workspacesv1.WorkspaceDeployment, name string) workspacesv1.AccessEntry {
	for _, e := range w.Status.Access {
		if e.Name == name {
			return e
		}
	}
	g.Expect(w.Status.Access).To(ContainElement(HaveField("Name", name)), "no access entry %q", name)
	return workspacesv1.AccessEntry{}
}

// AcceptRoutes plays the gateway controller for the routes of a workspace:
// Accepted and ResolvedRefs on their parent, the tenant Gateway.
func AcceptRoutes(g Gomega, workspace string) {
	g.Expect(testenv.AcceptRoutes(context.Background(), GatewayClient, defaultGateway, "ws-"+workspace)).To(Succeed())
}

// TCPRoute reads a workspace's TCPRoute on the regional cluster.
func TCPRoute(g Gomega, workspace, endpoint string) *gatewayv1.TCPRoute {
	r := &gatewayv1.TCPRoute{}
	g.Expect(GatewayClient.Get(context.Background(), client.ObjectKey{Namespace: "ws-" + workspace, Name: endpoint}, r)).To(Succeed())
	return r
}
