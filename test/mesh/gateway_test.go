package mesh_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// TestTenantGatewayIsWatched changes the tenant Gateway under a Running
// workspace and sees its routes and URLs follow within seconds, without any
// change to the workspace: the Gateway appears, is programmed, its wildcard
// listener moves to another domain, a TCP listener widens the pool for the
// SSH endpoint that waited for one, the Gateway stops being programmed and
// is programmed again, is deleted and comes back.
func TestTenantGatewayIsWatched(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	tn := newTenant(t, "gateway",
		workspacesv1.AccessEndpoint{Name: "web", Protocol: workspacesv1.AccessProtocolHTTP, Port: 8888},
		workspacesv1.AccessEndpoint{Name: "ssh", Protocol: workspacesv1.AccessProtocolSSH, Port: 22})
	apiary(t, tn.flags("ambient", false))
	key := tn.workspace(t, "dev")
	generation := running(t, key).Generation
	web := func(domain string) string { return "https://" + key.Name + "." + domain }

	// expect waits (briefly) for RoutesReady with a reason and message, and
	// for the URLs of web and ssh.
	expect := func(reason, message, webURL, sshURL string) {
		t.Helper()
		g.Eventually(func(g Gomega) {
			w := get(g, key)
			c := routesReady(g, w)
			g.Expect(c.Reason).To(Equal(reason), "message: %s", c.Message)
			g.Expect(c.Message).To(ContainSubstring(message))
			g.Expect(w.Status.Access).To(ConsistOf(
				And(HaveField("Name", "web"), HaveField("URL", webURL)),
				And(HaveField("Name", "ssh"), HaveField("URL", sshURL))))
			g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseRunning))
		}, soon, 100*time.Millisecond).Should(Succeed())
	}
	accept := func() {
		t.Helper()
		g.Eventually(func(g Gomega) { acceptRoutes(g, tn.gateway, key.Name) }, timeout, 100*time.Millisecond).Should(Succeed())
	}

	expect(workspacesv1.RoutingInfraNotReadyReason, fmt.Sprintf("Gateway %s not found on regional cluster %s/regional", tn.gateway, tn.ns), "", "")

	gateway(t, regionalC, tn.gateway, notProgrammed, https("one.example.com"))
	expect(workspacesv1.RoutingInfraNotReadyReason, fmt.Sprintf("Gateway %s is not programmed: Programmed is False", tn.gateway), "", "")

	setProgrammed(t, regionalC, tn.gateway, metav1.ConditionTrue)
	expect(workspacesv1.RoutingInfraNotReadyReason, "has no TCP listeners (the port pool)", web("one.example.com"), "")

	// The wildcard listener moves: new host names, and the route follows.
	editGateway(t, regionalC, tn.gateway, func(gw *gatewayv1.Gateway) {
		gw.Spec.Listeners[0].Hostname = ptr.To(gatewayv1.Hostname("*.two.example.com"))
	})
	expect(workspacesv1.RoutingInfraNotReadyReason, "has no TCP listeners (the port pool)", web("two.example.com"), "")
	route := &gatewayv1.HTTPRoute{}
	g.Expect(regionalC.Get(ctx, client.ObjectKey{Namespace: "ws-" + key.Name, Name: "web"}, route)).To(Succeed())
	g.Expect(route.Spec.Hostnames).To(ConsistOf(gatewayv1.Hostname(key.Name + ".two.example.com")))

	// A TCP listener widens the pool: the SSH endpoint gets its port.
	editGateway(t, regionalC, tn.gateway, func(gw *gatewayv1.Gateway) {
		gw.Spec.Listeners = append(gw.Spec.Listeners, tcp("ssh-0", 30022))
	})
	sshURL := "ssh://two.example.com:30022"
	expect(workspacesv1.RoutingInProgressReason, "", web("two.example.com"), sshURL)
	accept()
	expect(workspacesv1.RoutesReadyReason, "All 2 access endpoint(s) are routed", web("two.example.com"), sshURL)

	// Re-programming: not programmed, then programmed again.
	setProgrammed(t, regionalC, tn.gateway, metav1.ConditionFalse)
	expect(workspacesv1.RoutingInfraNotReadyReason, "is not programmed", "", "")
	setProgrammed(t, regionalC, tn.gateway, metav1.ConditionTrue)
	expect(workspacesv1.RoutesReadyReason, "All 2 access endpoint(s) are routed", web("two.example.com"), sshURL)

	// Deleted, then back.
	g.Expect(regionalC.Delete(ctx, &gatewayv1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: tn.gateway.Namespace, Name: tn.gateway.Name}})).To(Succeed())
	expect(workspacesv1.RoutingInfraNotReadyReason, "not found on regional cluster", "", "")
	gateway(t, regionalC, tn.gateway, programmed, https("two.example.com"), tcp("ssh-0", 30022))
	expect(workspacesv1.RoutesReadyReason, "All 2 access endpoint(s) are routed", web("two.example.com"), sshURL)

	g.Expect(get(g, key).Generation).To(Equal(generation), "the workspace did not change")
}
