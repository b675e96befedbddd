package mesh_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// TestWaypointsGateRoutes runs a workspace in ambient mode with per-child
// waypoints: while the waypoint Gateway c1-waypoint is missing or not
// programmed on the regional or the child cluster, the workspace is Running
// with RoutesReady=False/RoutingInfraNotReady naming what is missing, and
// no URL; once both are programmed it is routed, without any change to the
// workspace. The mirror namespace carries the enrolment label but no
// waypoint label; the mirror Service and the child's Service are global.
// At steady state Apiary sends no request to any cluster; losing a waypoint
// later takes the routes' readiness with it.
func TestWaypointsGateRoutes(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	tn := newTenant(t, "waypoints", workspacesv1.AccessEndpoint{Name: "web", Protocol: workspacesv1.AccessProtocolHTTP, Port: 8888})
	gateway(t, regionalC, tn.gateway, programmed, https("wp.example.com"))
	apiary(t, tn.flags("ambient", true))
	key := tn.workspace(t, "nb")
	generation := running(t, key).Generation
	wp := types.NamespacedName{Namespace: tn.waypoints, Name: "c1-waypoint"}

	// notReady waits for RoutesReady=False naming want, and not absent.
	notReady := func(want []string, absent ...string) {
		t.Helper()
		g.Eventually(func(g Gomega) {
			w := get(g, key)
			c := routesReady(g, w)
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(workspacesv1.RoutingInfraNotReadyReason), "message: %s", c.Message)
			for _, s := range want {
				g.Expect(c.Message).To(ContainSubstring(s))
			}
			for _, s := range absent {
				g.Expect(c.Message).NotTo(ContainSubstring(s))
			}
			g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseRunning))
			g.Expect(conditionOf(w.Status.Conditions, "Ready").Status).To(Equal(metav1.ConditionTrue), "routing never fails a workspace")
			g.Expect(w.Status.Access).To(ConsistOf(HaveField("URL", "")))
		}, soon, 100*time.Millisecond).Should(Succeed())
	}
	notReady([]string{"waypoint Gateway " + wp.String() + " not found on regional cluster " + tn.ns + "/regional",
		"waypoint Gateway " + wp.String() + " not found on child cluster " + tn.ns + "/c1"})

	waypoint(t, regionalC, wp, programmed)
	notReady([]string{"waypoint Gateway " + wp.String() + " not found on child cluster " + tn.ns + "/c1"}, "regional cluster")

	waypoint(t, childC, wp, notProgrammed)
	notReady([]string{"waypoint Gateway " + wp.String() + " on child cluster " + tn.ns + "/c1 is not programmed: Programmed is False: set by the test"})

	setProgrammed(t, childC, wp, metav1.ConditionTrue)
	url := "https://" + key.Name + ".wp.example.com"
	g.Eventually(func(g Gomega) {
		w := get(g, key)
		g.Expect(w.Status.Access).To(ConsistOf(HaveField("URL", url)))
		g.Expect(routesReady(g, w).Reason).To(Equal(workspacesv1.RoutingInProgressReason))
	}, soon, 100*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) { acceptRoutes(g, tn.gateway, key.Name) }, timeout, 100*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(routesReady(g, get(g, key)).Status).To(Equal(metav1.ConditionTrue))
	}, timeout, 100*time.Millisecond).Should(Succeed())
	g.Expect(get(g, key).Generation).To(Equal(generation), "the workspace did not change")

	// The mirror side: enrolled, without waypoint labels; Services global on both sides.
	mirror := &corev1.Namespace{}
	g.Expect(regionalC.Get(ctx, client.ObjectKey{Name: "ws-" + key.Name}, mirror)).To(Succeed())
	g.Expect(mirror.Labels).To(HaveKeyWithValue("istio.io/dataplane-mode", "ambient"))
	g.Expect(mirror.Labels).To(HaveKeyWithValue(workspaceLabel, key.Name))
	for _, k := range []string{"istio.io/use-waypoint", "istio.io/use-waypoint-namespace", "istio.io/ingress-use-waypoint"} {
		g.Expect(mirror.Labels).NotTo(HaveKey(k))
	}
	svc := client.ObjectKey{Namespace: "ws-" + key.Name, Name: "wsd-c1-" + key.Name + "-web"}
	for _, c := range []client.Client{regionalC, childC} {
		s := &corev1.Service{}
		g.Expect(c.Get(ctx, svc, s)).To(Succeed())
		g.Expect(s.Labels).To(HaveKeyWithValue("istio.io/global", "true"))
	}

	// Steady state: no request to any cluster, even when the workspace is
	// reconciled again (it reads the Gateways from the watched caches).
	quiet(t)
	before := [3]int64{mgmtRequests.Load(), regionalProxy.requests.Load(), childProxy.requests.Load()}
	w := get(g, key)
	w.Annotations = map[string]string{"reconcile.fluxcd.io/requestedAt": "now"}
	g.Expect(env.Client.Update(ctx, w)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, key).Status.LastHandledReconcileAt).To(Equal("now"))
	}, timeout, 100*time.Millisecond).Should(Succeed())
	quiet(t)
	g.Expect(regionalProxy.requests.Load()-before[1]).To(BeZero(), "requests to the regional cluster")
	g.Expect(childProxy.requests.Load()-before[2]).To(BeZero(), "requests to the child cluster")
	g.Expect(mgmtRequests.Load()-before[0]).To(BeNumerically("<=", 1), "the status patch of the handled request only")

	// Losing a waypoint takes readiness with it; its return restores it.
	g.Expect(regionalC.Delete(ctx, &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: wp.Namespace, Name: wp.Name}})).To(Succeed())
	notReady([]string{"waypoint Gateway " + wp.String() + " not found on regional cluster " + tn.ns + "/regional"})
	waypoint(t, regionalC, wp, programmed)
	g.Eventually(func(g Gomega) {
		w := get(g, key)
		g.Expect(routesReady(g, w).Status).To(Equal(metav1.ConditionTrue), "message: %s", routesReady(g, w).Message)
		g.Expect(w.Status.Access).To(ConsistOf(HaveField("URL", url)))
	}, soon, 100*time.Millisecond).Should(Succeed())
}

// TestSidecarModeNeedsNoWaypoints routes a workspace in sidecar mode with
// --workspace-waypoint-enabled left on: waypoints are ambient's, so none is
// required, and the mirror namespace is enrolled for injection.
func TestSidecarModeNeedsNoWaypoints(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	tn := newTenant(t, "sidecar", workspacesv1.AccessEndpoint{Name: "web", Protocol: workspacesv1.AccessProtocolHTTP, Port: 8888})
	gateway(t, regionalC, tn.gateway, programmed, https("sc.example.com"))
	apiary(t, tn.flags("sidecar", true))
	key := tn.workspace(t, "nb")
	running(t, key)
	g.Eventually(func(g Gomega) { acceptRoutes(g, tn.gateway, key.Name) }, timeout, 100*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) {
		w := get(g, key)
		g.Expect(routesReady(g, w).Status).To(Equal(metav1.ConditionTrue), "message: %s", routesReady(g, w).Message)
		g.Expect(w.Status.Access).To(ConsistOf(HaveField("URL", "https://"+key.Name+".sc.example.com")))
	}, timeout, 100*time.Millisecond).Should(Succeed())
	mirror := &corev1.Namespace{}
	g.Expect(regionalC.Get(ctx, client.ObjectKey{Name: "ws-" + key.Name}, mirror)).To(Succeed())
	g.Expect(mirror.Labels).To(HaveKeyWithValue("istio-injection", "enabled"))
	g.Expect(mirror.Labels).NotTo(HaveKey("istio.io/dataplane-mode"))
	g.Expect(childNamespaceLabels(g, key.Name)).To(HaveKeyWithValue("istio-injection", "enabled"))
}
