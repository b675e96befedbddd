package mesh_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/access"
	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/test/standin"
	"github.com/apiaryhq/apiary/test/world"
	"github.com/apiaryhq/apiary/test/world/builder"
)

// tenant is one test's world: a namespace with a regional cluster
// "regional" (KOF name <ns>) and its child "c1", a class, and the names of
// the test's tenant Gateway and waypoint namespace on the regional and
// child control planes (shared by every test, so each test has its own).
type tenant struct {
	ns        string
	suffix    string
	class     string
	gateway   types.NamespacedName
	waypoints string
}

// newTenant makes a tenant whose class exposes endpoints; the stand-in's
// chart creates their Services <release>-<endpoint> on the child.
func newTenant(t *testing.T, prefix string, endpoints ...workspacesv1.AccessEndpoint) *tenant {
	t.Helper()
	ctx := context.Background()
	ns := env.NewNamespace(t, prefix)
	suffix := ns[len(ns)-5:]
	tn := &tenant{ns: ns, suffix: suffix, class: "cls-" + ns,
		gateway:   types.NamespacedName{Namespace: "gw-" + suffix, Name: "tenant"},
		waypoints: "wp-" + suffix}
	for _, c := range []client.Client{regionalC, childC} {
		for _, name := range []string{tn.gateway.Namespace, tn.waypoints} {
			obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
			if err := c.Create(ctx, obj); client.IgnoreAlreadyExists(err) != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Delete(context.Background(), obj) })
		}
	}
	builder.Templates(t, env.Client, ns)
	cluster(t, ns, "regional", map[string]string{access.ClusterNameLabel: ns, access.ClusterRoleLabel: access.RoleRegional},
		map[string]string{regionalAnnotation: "true"})
	cluster(t, ns, "c1", map[string]string{access.RegionalClusterNameLabel: ns}, nil)

	var chartEndpoints []map[string]any
	for _, ep := range endpoints {
		chartEndpoints = append(chartEndpoints, map[string]any{"name": ep.Name, "port": ep.Port})
	}
	values, err := json.Marshal(map[string]any{"endpoints": chartEndpoints})
	if err != nil {
		t.Fatal(err)
	}
	c := &workspacesv1.WorkspaceClass{ObjectMeta: metav1.ObjectMeta{Name: tn.class}, Spec: workspacesv1.WorkspaceClassSpec{
		DisplayName: "workspace", ServiceTemplate: workspacesv1.ServiceTemplateRef{Name: "tmpl", Namespace: ns},
		AccessEndpoints: endpoints, DefaultValues: &apiextensionsv1.JSON{Raw: values}}}
	if err := env.Client.Create(ctx, c); err != nil {
		t.Fatalf("creating WorkspaceClass: %v", err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), c) })
	return tn
}

// flags are the manager flags of the tenant with a mesh mode and waypoints.
func (tn *tenant) flags(mode string, waypoints bool) flags {
	return flags{mode: mode, waypoints: waypoints, waypointNamespace: tn.waypoints, gateway: tn.gateway}
}

// cluster creates a ClusterDeployment the stand-in makes ready.
func cluster(t *testing.T, ns, name string, labels, annotations map[string]string) {
	t.Helper()
	cd := standin.NewClusterDeployment(ns, name, "tpl", "cred")
	cd.Labels, cd.Annotations = labels, annotations
	builder.CreateReady(t, env.Client, cd)
}

// workspace creates a workspace of the tenant's class on c1, deleted (and
// waited for) when the test ends.
func (tn *tenant) workspace(t *testing.T, name string) client.ObjectKey {
	t.Helper()
	ctx := context.Background()
	w := &workspacesv1.WorkspaceDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-" + tn.suffix, Namespace: tn.ns},
		Spec: workspacesv1.WorkspaceDeploymentSpec{WorkspaceClassRef: tn.class,
			ClusterDeploymentRef: workspacesv1.ClusterDeploymentReference{Name: "c1", Namespace: tn.ns}},
	}
	if err := env.Client.Create(ctx, w); err != nil {
		t.Fatalf("creating workspace: %v", err)
	}
	t.Cleanup(func() { world.DeleteAndWait(t, env.Client, w) })
	return client.ObjectKeyFromObject(w)
}

func get(g Gomega, key client.ObjectKey) *workspacesv1.WorkspaceDeployment {
	w := &workspacesv1.WorkspaceDeployment{}
	g.Expect(env.Client.Get(context.Background(), key, w)).To(Succeed())
	return w
}

// running waits until a workspace is Running and returns it.
func running(t *testing.T, key client.ObjectKey) *workspacesv1.WorkspaceDeployment {
	t.Helper()
	var w *workspacesv1.WorkspaceDeployment
	NewWithT(t).Eventually(func(g Gomega) {
		w = get(g, key)
		g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseRunning), "message: %s", w.Status.Message)
	}, timeout, 200*time.Millisecond).Should(Succeed())
	return w
}

func conditionOf(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

// routesReady returns a workspace's RoutesReady condition, failing while
// it has none.
func routesReady(g Gomega, w *workspacesv1.WorkspaceDeployment) metav1.Condition {
	c := conditionOf(w.Status.Conditions, workspacesv1.RoutesReadyCondition)
	g.Expect(c).NotTo(BeNil(), "no RoutesReady condition")
	return *c
}

// childNamespaceLabels reads the labels of ws-<workspace> on the child.
func childNamespaceLabels(g Gomega, workspace string) map[string]string {
	ns := &corev1.Namespace{}
	g.Expect(childC.Get(context.Background(), client.ObjectKey{Name: "ws-" + workspace}, ns)).To(Succeed())
	return ns.Labels
}

// gateway creates a Gateway on a cluster, with its Programmed condition
// (none when programmed is nil).
func gateway(t *testing.T, c client.Client, key types.NamespacedName, programmed *metav1.ConditionStatus, listeners ...gatewayv1.Listener) {
	t.Helper()
	ctx := context.Background()
	gw := &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name},
		Spec: gatewayv1.GatewaySpec{GatewayClassName: "istio", Listeners: listeners}}
	if err := c.Create(ctx, gw); err != nil {
		t.Fatalf("creating Gateway %s: %v", key, err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), gw) })
	if programmed != nil {
		setProgrammed(t, c, key, *programmed)
	}
}

// waypoint creates the waypoint Gateway of a child on a cluster, as an
// administrator would (Istio's waypoint class, an HBONE listener).
func waypoint(t *testing.T, c client.Client, key types.NamespacedName, programmed *metav1.ConditionStatus) {
	t.Helper()
	gateway(t, c, key, programmed, gatewayv1.Listener{Name: "mesh", Protocol: "HBONE", Port: 15008})
}

// setProgrammed sets a Gateway's Programmed condition, as its controller would.
func setProgrammed(t *testing.T, c client.Client, key types.NamespacedName, status metav1.ConditionStatus) {
	t.Helper()
	reason := "Programmed"
	if status != metav1.ConditionTrue {
		reason = "Invalid"
	}
	updateGateway(t, c, key, func(gw *gatewayv1.Gateway) {
		gw.Status.Conditions = []metav1.Condition{{Type: "Programmed", Status: status, Reason: reason,
			Message: "set by the test", LastTransitionTime: metav1.Now(), ObservedGeneration: gw.Generation}}
	}, func(ctx context.Context, gw *gatewayv1.Gateway) error { return c.Status().Update(ctx, gw) })
}

// editGateway changes a Gateway's spec.
func editGateway(t *testing.T, c client.Client, key types.NamespacedName, edit func(*gatewayv1.Gateway)) {
	t.Helper()
	updateGateway(t, c, key, edit, func(ctx context.Context, gw *gatewayv1.Gateway) error { return c.Update(ctx, gw) })
}

// updateGateway reads a Gateway, changes it and writes it, until no
// conflict stands in the way.
func updateGateway(t *testing.T, c client.Client, key types.NamespacedName, change func(*gatewayv1.Gateway),
	write func(context.Context, *gatewayv1.Gateway) error) {
	t.Helper()
	ctx := context.Background()
	NewWithT(t).Eventually(func() error {
		gw := &gatewayv1.Gateway{}
		if err := c.Get(ctx, key, gw); err != nil {
			return err
		}
		change(gw)
		return write(ctx, gw)
	}, timeout, 100*time.Millisecond).Should(Succeed())
}

func https(domain string) gatewayv1.Listener {
	return gatewayv1.Listener{Name: "https", Protocol: gatewayv1.HTTPSProtocolType, Port: 443,
		Hostname: ptr.To(gatewayv1.Hostname("*." + domain)),
		TLS:      &gatewayv1.ListenerTLSConfig{CertificateRefs: []gatewayv1.SecretObjectReference{{Name: "wildcard"}}}}
}

func tcp(name string, port int32) gatewayv1.Listener {
	return gatewayv1.Listener{Name: gatewayv1.SectionName(name), Protocol: gatewayv1.TCPProtocolType, Port: gatewayv1.PortNumber(port)}
}

// acceptRoutes plays the gateway controller for a workspace's routes.
func acceptRoutes(g Gomega, gw types.NamespacedName, workspace string) {
	g.Expect(testenv.AcceptRoutes(context.Background(), regionalC, gw, "ws-"+workspace)).To(Succeed())
}

var (
	programmed    = ptr.To(metav1.ConditionTrue)
	notProgrammed = ptr.To(metav1.ConditionFalse)
)

// quiet waits until Apiary made no request to any cluster for a while.
func quiet(t *testing.T) {
	t.Helper()
	total := func() int64 {
		return mgmtRequests.Load() + regionalProxy.requests.Load() + childProxy.requests.Load()
	}
	last, since := total(), time.Now()
	deadline := time.Now().Add(timeout)
	for time.Since(since) < 3*time.Second {
		if time.Now().After(deadline) {
			t.Fatal("Apiary never settled")
		}
		time.Sleep(100 * time.Millisecond)
		if n := total(); n != last {
			last, since = n, time.Now()
		}
	}
}
