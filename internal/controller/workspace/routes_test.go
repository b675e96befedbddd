package workspace_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/access"
	"github.com/apiaryhq/apiary/internal/controller/controllertest"
)

const (
	protoHTTP = workspacesv1.AccessProtocolHTTP
	protoSSH  = workspacesv1.AccessProtocolSSH
)

// TestWorkspaceAccessOneHTTPEndpoint publishes a workspace's one HTTP
// endpoint at https://<workspace>.<tenant domain>: the URL appears at once,
// and the entry is ready once the Gateway accepted the route.
func TestWorkspaceAccessOneHTTPEndpoint(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "access-one")
	controllertest.RegionalSetup(t, ns, "c1")
	class := controllertest.AccessClass(t, ns, "notebook", controllertest.Endpoint("web", protoHTTP, 8888))
	name := "nb-" + ns[len(ns)-5:]
	key := controllertest.CreateWorkspace(t, controllertest.NewWorkspace(ns, name, class.Name, "c1"))

	controllertest.EventuallyRunning(t, key)
	url := "https://" + name + "." + controllertest.TenantDomain
	g.Eventually(func(g Gomega) {
		w := controllertest.GetWorkspace(g, key)
		g.Expect(w.Status.Access).To(HaveLen(1))
		g.Expect(w.Status.Access[0].URL).To(Equal(url))
		g.Expect(w.Status.Access[0].Protocol).To(Equal(protoHTTP))
		g.Expect(w.Status.Access[0].Ready).To(BeFalse())
		g.Expect(w.Status.Access[0].Message).To(ContainSubstring("waiting for the gateway to accept the route"))
		g.Expect(controllertest.Condition(w, workspacesv1.RoutesReadyCondition).Reason).To(Equal(workspacesv1.RoutingInProgressReason))
		g.Expect(w.Status.Routes.Cluster).To(Equal(ns + "/regional"))
		g.Expect(w.Status.Routes.Gateway).To(Equal("istio-system/istio-ingressgateway"))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())

	// On the regional cluster: the namespace ws-<name>, the mirror Service
	// and the HTTPRoute on the tenant Gateway.
	route := &gatewayv1.HTTPRoute{}
	g.Expect(controllertest.GatewayClient.Get(ctx, client.ObjectKey{Namespace: "ws-" + name, Name: "web"}, route)).To(Succeed())
	g.Expect(route.Labels).To(HaveKeyWithValue("workspaces.exalsius.ai/workspace", name))
	g.Expect(route.Spec.Hostnames).To(ConsistOf(gatewayv1.Hostname(name + "." + controllertest.TenantDomain)))
	g.Expect(route.Spec.ParentRefs).To(HaveLen(1))
	g.Expect(string(route.Spec.ParentRefs[0].Name)).To(Equal(access.DefaultGatewayName))
	g.Expect(string(*route.Spec.ParentRefs[0].Namespace)).To(Equal(access.DefaultGatewayNamespace))
	backend := route.Spec.Rules[0].BackendRefs[0]
	g.Expect(string(backend.Name)).To(Equal("wsd-c1-" + name + "-web"))
	g.Expect(int32(*backend.Port)).To(BeEquivalentTo(8888))
	svc := &corev1.Service{}
	g.Expect(controllertest.GatewayClient.Get(ctx, client.ObjectKey{Namespace: "ws-" + name, Name: "wsd-c1-" + name + "-web"}, svc)).To(Succeed())
	g.Expect(svc.Spec.Selector).To(BeEmpty())
	g.Expect(svc.Spec.Ports).To(ConsistOf(HaveField("Port", int32(8888))))

	g.Eventually(func(g Gomega) { controllertest.AcceptRoutes(g, name) }, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) {
		w := controllertest.GetWorkspace(g, key)
		g.Expect(w.Status.Access[0].Ready).To(BeTrue(), "message: %s", w.Status.Access[0].Message)
		g.Expect(w.Status.Access[0].URL).To(Equal(url))
		c := controllertest.Condition(w, workspacesv1.RoutesReadyCondition)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Reason).To(Equal(workspacesv1.RoutesReadyReason))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())

	// The URL column shows the first entry's URL.
	crd := &apiextensionsv1.CustomResourceDefinition{}
	g.Expect(controllertest.Env.Client.Get(ctx, client.ObjectKey{Name: "workspacedeployments.workspaces.exalsius.ai"}, crd)).To(Succeed())
	g.Expect(crd.Spec.Versions[0].AdditionalPrinterColumns).To(ContainElement(And(
		HaveField("Name", "URL"), HaveField("JSONPath", ".status.access[0].url"))))

	// Deleting the workspace removes its routes first.
	controllertest.DeleteWorkspace(t, key)
	g.Expect(apierrors.IsNotFound(controllertest.GatewayClient.Get(ctx, client.ObjectKey{Namespace: "ws-" + name, Name: "web"}, &gatewayv1.HTTPRoute{}))).To(BeTrue())
	g.Expect(apierrors.IsNotFound(controllertest.GatewayClient.Get(ctx, client.ObjectKeyFromObject(svc), &corev1.Service{}))).To(BeTrue())
}

// TestWorkspaceAccessSeveralHTTPEndpoints gives the first HTTP endpoint the
// workspace's host, and the others <workspace>-<endpoint>.
func TestWorkspaceAccessSeveralHTTPEndpoints(t *testing.T) {
	g := NewWithT(t)
	ns := controllertest.Env.NewNamespace(t, "access-many")
	controllertest.RegionalSetup(t, ns, "c1")
	class := controllertest.AccessClass(t, ns, "lab", controllertest.Endpoint("lab", protoHTTP, 8888), controllertest.Endpoint("tensorboard", protoHTTP, 6006),
		workspacesv1.AccessEndpoint{Name: "hub", Protocol: protoHTTP, Port: 80, ServiceName: "proxy-public"})
	name := "lab-" + ns[len(ns)-5:]
	key := controllertest.CreateWorkspace(t, controllertest.NewWorkspace(ns, name, class.Name, "c1"))
	controllertest.EventuallyRunning(t, key)
	g.Eventually(func(g Gomega) {
		w := controllertest.GetWorkspace(g, key)
		g.Expect(w.Status.Access).To(HaveLen(3))
		g.Expect(w.Status.Access[0].URL).To(Equal("https://" + name + "." + controllertest.TenantDomain))
		g.Expect(controllertest.AccessEntry(g, w, "tensorboard").URL).To(Equal("https://" + name + "-tensorboard." + controllertest.TenantDomain))
		g.Expect(controllertest.AccessEntry(g, w, "hub").URL).To(Equal("https://" + name + "-hub." + controllertest.TenantDomain))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
	route := &gatewayv1.HTTPRoute{}
	g.Expect(controllertest.GatewayClient.Get(context.Background(), client.ObjectKey{Namespace: "ws-" + name, Name: "hub"}, route)).To(Succeed())
	g.Expect(string(route.Spec.Rules[0].BackendRefs[0].Name)).To(Equal("proxy-public"), "serviceName overrides the Service")

	g.Eventually(func(g Gomega) { controllertest.AcceptRoutes(g, name) }, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) {
		w := controllertest.GetWorkspace(g, key)
		for _, e := range w.Status.Access {
			g.Expect(e.Ready).To(BeTrue(), "%s: %s", e.Name, e.Message)
		}
		g.Expect(controllertest.Condition(w, workspacesv1.RoutesReadyCondition).Message).To(Equal("All 3 access endpoint(s) are routed"))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
}

// TestWorkspaceAccessPortPool shares a pool of two TCP listeners between
// three workspaces with an SSH endpoint: the first two, created together,
// get different ports, lowest first; the third finds the pool exhausted
// (its HTTP endpoint still routed, the workspace still Running) and gets the
// port of the first once that is deleted. The deletion also sweeps routes
// of workspaces that no longer exist.
func TestWorkspaceAccessPortPool(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "access-pool")
	controllertest.RegionalSetup(t, ns, "c1")
	class := controllertest.AccessClass(t, ns, "devbox", controllertest.Endpoint("web", protoHTTP, 8080), controllertest.Endpoint("ssh", protoSSH, 22))
	suffix := ns[len(ns)-5:]
	a, b, c := "a-"+suffix, "b-"+suffix, "c-"+suffix
	keyA := controllertest.CreateWorkspace(t, controllertest.NewWorkspace(ns, a, class.Name, "c1"))
	keyB := controllertest.CreateWorkspace(t, controllertest.NewWorkspace(ns, b, class.Name, "c1"))

	sshURL := func(port int) string { return fmt.Sprintf("ssh://%s:%d", controllertest.TenantDomain, port) }
	urls := map[string]string{}
	for _, key := range []client.ObjectKey{keyA, keyB} {
		controllertest.EventuallyRunning(t, key)
		g.Eventually(func(g Gomega) {
			w := controllertest.GetWorkspace(g, key)
			urls[key.Name] = controllertest.AccessEntry(g, w, "ssh").URL
			g.Expect(urls[key.Name]).NotTo(BeEmpty())
			g.Expect(w.Status.Routes.Ports).To(HaveLen(1))
		}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
	}
	g.Expect([]string{urls[a], urls[b]}).To(ConsistOf(sshURL(controllertest.PoolPort0), sshURL(controllertest.PoolPort1)), "two workspaces never share a port")
	first := a
	if urls[b] == sshURL(controllertest.PoolPort0) {
		first = b
	}
	route := controllertest.TCPRoute(g, first, "ssh")
	g.Expect(string(*route.Spec.ParentRefs[0].SectionName)).To(Equal("ssh-0"), "the lowest port's listener")
	g.Expect(string(route.Spec.Rules[0].BackendRefs[0].Name)).To(Equal("wsd-c1-" + first + "-ssh"))

	keyC := controllertest.CreateWorkspace(t, controllertest.NewWorkspace(ns, c, class.Name, "c1"))
	controllertest.EventuallyRunning(t, keyC)
	g.Eventually(func(g Gomega) {
		w := controllertest.GetWorkspace(g, keyC)
		e := controllertest.AccessEntry(g, w, "ssh")
		g.Expect(e.URL).To(BeEmpty())
		g.Expect(e.Ready).To(BeFalse())
		g.Expect(e.Message).To(ContainSubstring("port pool exhausted: all 2 TCP listeners of Gateway istio-system/istio-ingressgateway are in use"))
		g.Expect(controllertest.AccessEntry(g, w, "web").URL).To(Equal("https://" + c + "." + controllertest.TenantDomain))
		cond := controllertest.Condition(w, workspacesv1.RoutesReadyCondition)
		g.Expect(cond.Reason).To(Equal(workspacesv1.PortPoolExhaustedReason))
		g.Expect(cond.Message).To(ContainSubstring("ssh: port pool exhausted"))
		g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseRunning))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())

	// Something Apiary delivered for a workspace that no longer exists.
	orphan := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ws-" + first, Name: "ghost", Labels: map[string]string{
		"apiary.exalsius.ai/owner-kind": "WorkspaceRoutes", "apiary.exalsius.ai/owner-namespace": ns, "apiary.exalsius.ai/owner-name": "ghost"}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 1}}}}
	g.Expect(controllertest.GatewayClient.Create(ctx, orphan)).To(Succeed())

	// Deleting the workspace on the lowest port frees it for the waiting one.
	controllertest.DeleteWorkspace(t, client.ObjectKey{Namespace: ns, Name: first})
	g.Expect(apierrors.IsNotFound(controllertest.GatewayClient.Get(ctx, client.ObjectKey{Namespace: "ws-" + first, Name: "ssh"}, &gatewayv1.TCPRoute{}))).To(BeTrue())
	g.Eventually(func(g Gomega) {
		w := controllertest.GetWorkspace(g, keyC)
		g.Expect(controllertest.AccessEntry(g, w, "ssh").URL).To(Equal(sshURL(controllertest.PoolPort0)))
		g.Expect(w.Status.Routes.Ports).To(ConsistOf(workspacesv1.PortAssignment{Endpoint: "ssh", Listener: "ssh-0", Port: controllertest.PoolPort0}))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
	g.Expect(string(*controllertest.TCPRoute(g, c, "ssh").Spec.ParentRefs[0].SectionName)).To(Equal("ssh-0"))
	g.Eventually(func() bool {
		return apierrors.IsNotFound(controllertest.GatewayClient.Get(ctx, client.ObjectKeyFromObject(orphan), &corev1.Service{}))
	}, controllertest.Timeout, 200*time.Millisecond).Should(BeTrue(), "the orphan is swept after the deletion")

	// The ports are sticky: the remaining workspaces keep theirs.
	g.Eventually(func(g Gomega) { controllertest.AcceptRoutes(g, c) }, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) {
		w := controllertest.GetWorkspace(g, keyC)
		g.Expect(controllertest.ConditionStatus(w, workspacesv1.RoutesReadyCondition)).To(Equal(metav1.ConditionTrue))
		g.Expect(controllertest.AccessEntry(g, w, "ssh").URL).To(Equal(sshURL(controllertest.PoolPort0)))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
	other := b
	if first == b {
		other = a
	}
	g.Expect(controllertest.AccessEntry(g, controllertest.GetWorkspace(g, client.ObjectKey{Namespace: ns, Name: other}), "ssh").URL).To(Equal(sshURL(controllertest.PoolPort1)))
}

// TestWorkspaceAccessSkipsPortsOfOtherWriters leaves alone a pool port that
// a TCPRoute of another controller holds.
func TestWorkspaceAccessSkipsPortsOfOtherWriters(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "access-foreign")
	controllertest.RegionalSetup(t, ns, "c1")
	foreign := &gatewayv1.TCPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: access.DefaultGatewayNamespace, Name: "foreign-" + ns},
		Spec: gatewayv1.TCPRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{
			Name: access.DefaultGatewayName, SectionName: ptr.To(gatewayv1.SectionName("ssh-0"))}}},
			Rules: []gatewayv1.TCPRouteRule{{BackendRefs: []gatewayv1.BackendRef{{BackendObjectReference: gatewayv1.BackendObjectReference{
				Name: "elsewhere", Port: ptr.To(gatewayv1.PortNumber(22))}}}}}}}
	g.Expect(controllertest.GatewayClient.Create(ctx, foreign)).To(Succeed())
	t.Cleanup(func() { _ = controllertest.GatewayClient.Delete(ctx, foreign) })

	class := controllertest.AccessClass(t, ns, "shell", controllertest.Endpoint("ssh", protoSSH, 22))
	name := "sh-" + ns[len(ns)-5:]
	key := controllertest.CreateWorkspace(t, controllertest.NewWorkspace(ns, name, class.Name, "c1"))
	controllertest.EventuallyRunning(t, key)
	g.Eventually(func(g Gomega) {
		w := controllertest.GetWorkspace(g, key)
		g.Expect(w.Status.Access).To(HaveLen(1))
		g.Expect(w.Status.Access[0].URL).To(Equal(fmt.Sprintf("ssh://%s:%d", controllertest.TenantDomain, controllertest.PoolPort1)))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
}

// TestWorkspaceAccessWithoutRoutingInfrastructure runs workspaces whose
// cluster has no regional cluster, or one without the Gateway API: they are
// Running with empty URLs, and RoutesReady says what is missing.
func TestWorkspaceAccessWithoutRoutingInfrastructure(t *testing.T) {
	g := NewWithT(t)
	ns := controllertest.Env.NewNamespace(t, "access-none")
	controllertest.ReadyCluster(t, ns, "plain")
	// A regional cluster whose kubeconfig reaches the child control plane,
	// which has no Gateway API.
	controllertest.KOFCluster(t, ns, "bare-regional", map[string]string{access.ClusterNameLabel: "bare"}, nil)
	controllertest.KOFCluster(t, ns, "bare-child", map[string]string{access.RegionalClusterNameLabel: "bare"}, nil)
	controllertest.KOFCluster(t, ns, "orphan-child", map[string]string{access.RegionalClusterNameLabel: "nowhere"}, nil)
	class := controllertest.AccessClass(t, ns, "web", controllertest.Endpoint("web", protoHTTP, 80), controllertest.Endpoint("ssh", protoSSH, 22))
	suffix := ns[len(ns)-5:]
	for cluster, want := range map[string]string{
		"plain":        "has no regional cluster (label k0rdent.mirantis.com/kof-regional-cluster-name)",
		"bare-child":   "the Gateway API is not installed on regional cluster " + ns + "/bare-regional",
		"orphan-child": "no regional ClusterDeployment labelled k0rdent.mirantis.com/kof-cluster-name=nowhere",
	} {
		key := controllertest.CreateWorkspace(t, controllertest.NewWorkspace(ns, cluster+"-"+suffix, class.Name, cluster))
		controllertest.EventuallyRunning(t, key)
		g.Eventually(func(g Gomega) {
			w := controllertest.GetWorkspace(g, key)
			g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseRunning))
			g.Expect(controllertest.ConditionStatus(w, "Ready")).To(Equal(metav1.ConditionTrue))
			c := controllertest.Condition(w, workspacesv1.RoutesReadyCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(workspacesv1.RoutingInfraNotReadyReason))
			g.Expect(c.Message).To(ContainSubstring(want))
			g.Expect(w.Status.Access).To(HaveLen(2))
			for _, e := range w.Status.Access {
				g.Expect(e.URL).To(BeEmpty())
				g.Expect(e.Ready).To(BeFalse())
				g.Expect(e.Message).To(ContainSubstring(want))
			}
		}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
	}
}
