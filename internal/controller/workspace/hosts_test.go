package workspace_test

import (
	"context"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/access"
	"github.com/apiaryhq/apiary/internal/controller/controllertest"
	"github.com/apiaryhq/apiary/internal/delivery"
	routesink "github.com/apiaryhq/apiary/internal/delivery/routes"
)

// TestWorkspaceAccessHostNameHeldByOne: workspace nb, whose class has a
// second HTTP endpoint api, and workspace nb-api, whose primary endpoint
// is at nb-api.<domain> too, both need that host name. nb, first, holds it
// and is ready; nb-api waits with HostNameTaken naming nb, and the
// regional cluster has one HTTPRoute for the host. A steady nb lists no
// routes. Once nb is deleted, nb-api gets the host and is ready.
func TestWorkspaceAccessHostNameHeldByOne(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "access-hosts")
	controllertest.RegionalSetup(t, ns, "c1")
	two := controllertest.AccessClass(t, ns, "web-api", controllertest.Endpoint("web", protoHTTP, 8888), controllertest.Endpoint("api", protoHTTP, 8000))
	one := controllertest.AccessClass(t, ns, "web", controllertest.Endpoint("web", protoHTTP, 8888))
	nb := "nb-" + ns[len(ns)-5:]
	nbAPI := nb + "-api"
	host := nbAPI + "." + controllertest.TenantDomain

	keyNB := controllertest.CreateWorkspace(t, controllertest.NewWorkspace(ns, nb, two.Name, "c1"))
	controllertest.EventuallyRunning(t, keyNB)
	g.Eventually(func(g Gomega) { controllertest.AcceptRoutes(g, nb) }, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
	eventuallyRoutesReady(t, keyNB)
	g.Expect(controllertest.AccessEntry(g, controllertest.GetWorkspace(g, keyNB), "api").URL).To(Equal("https://" + host))

	keyAPI := controllertest.CreateWorkspace(t, controllertest.NewWorkspace(ns, nbAPI, one.Name, "c1"))
	controllertest.EventuallyRunning(t, keyAPI)
	held := "host name " + host + " is held by workspace " + ns + "/" + nb
	g.Eventually(func(g Gomega) {
		w := controllertest.GetWorkspace(g, keyAPI)
		e := controllertest.AccessEntry(g, w, "web")
		g.Expect(e.URL).To(BeEmpty())
		g.Expect(e.Ready).To(BeFalse())
		g.Expect(e.Message).To(Equal(held))
		c := controllertest.Condition(w, workspacesv1.RoutesReadyCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(workspacesv1.HostNameTakenReason))
		g.Expect(c.Message).To(ContainSubstring("web: " + held))
		g.Expect(w.Status.Routes.Hosts).To(BeEmpty())
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(routesWithHost(g, host)).To(Equal([]string{"ws-" + nb + "/api"}), "one HTTPRoute holds the host")
		w := controllertest.GetWorkspace(g, keyNB)
		g.Expect(controllertest.ConditionStatus(w, workspacesv1.RoutesReadyCondition)).To(Equal(metav1.ConditionTrue))
		g.Expect(controllertest.AccessEntry(g, w, "api").URL).To(Equal("https://" + host))
	}, 2*time.Second, 200*time.Millisecond).Should(Succeed())

	// A steady holder costs no request of the regional cluster's routes.
	mark := controllertest.Requests.Mark()
	w := controllertest.GetWorkspace(g, keyNB)
	patch := client.MergeFrom(w.DeepCopy())
	w.Annotations = map[string]string{meta.ReconcileRequestAnnotation: time.Now().String()}
	g.Expect(controllertest.Env.Client.Patch(ctx, w, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(controllertest.GetWorkspace(g, keyNB).Status.LastHandledReconcileAt).To(Equal(w.Annotations[meta.ReconcileRequestAnnotation]))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
	time.Sleep(time.Second)
	g.Expect(controllertest.Requests.Since(mark, func(r controllertest.APIRequest) bool { return r.Side == "child" && r.Resource == "httproutes" })).To(BeEmpty())

	// The holder goes: its routes first, then the waiting workspace gets the host.
	controllertest.DeleteWorkspace(t, keyNB)
	g.Eventually(func(g Gomega) {
		g.Expect(routesWithHost(g, host)).To(Equal([]string{"ws-" + nbAPI + "/web"}))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) { controllertest.AcceptRoutes(g, nbAPI) }, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
	eventuallyRoutesReady(t, keyAPI)
	w = controllertest.GetWorkspace(g, keyAPI)
	g.Expect(controllertest.AccessEntry(g, w, "web").URL).To(Equal("https://" + host))
	g.Expect(w.Status.Routes.Hosts).To(Equal([]string{host}))
}

// TestWorkspaceAccessHostNameRace creates both workspaces of
// TestWorkspaceAccessHostNameHeldByOne at once: whichever claims the host
// first holds it, and the other waits naming it.
func TestWorkspaceAccessHostNameRace(t *testing.T) {
	g := NewWithT(t)
	ns := controllertest.Env.NewNamespace(t, "access-race")
	controllertest.RegionalSetup(t, ns, "c1")
	two := controllertest.AccessClass(t, ns, "web-api", controllertest.Endpoint("web", protoHTTP, 8888), controllertest.Endpoint("api", protoHTTP, 8000))
	one := controllertest.AccessClass(t, ns, "web", controllertest.Endpoint("web", protoHTTP, 8888))
	nb := "nb-" + ns[len(ns)-5:]
	nbAPI := nb + "-api"
	host := nbAPI + "." + controllertest.TenantDomain
	keys := map[string]client.ObjectKey{
		nb:    controllertest.CreateWorkspace(t, controllertest.NewWorkspace(ns, nb, two.Name, "c1")),
		nbAPI: controllertest.CreateWorkspace(t, controllertest.NewWorkspace(ns, nbAPI, one.Name, "c1")),
	}
	endpointOf := map[string]string{nb: "api", nbAPI: "web"}
	g.Eventually(func(g Gomega) {
		var holders, waiters []string
		for name, key := range keys {
			e := controllertest.AccessEntry(g, controllertest.GetWorkspace(g, key), endpointOf[name])
			switch {
			case e.URL == "https://"+host:
				holders = append(holders, name)
			case e.Message != "":
				g.Expect(e.Message).To(MatchRegexp(`^host name %s is held by workspace %s/`, host, ns))
				waiters = append(waiters, name)
			}
		}
		g.Expect(holders).To(HaveLen(1))
		g.Expect(waiters).To(HaveLen(1))
		holder, waiter := holders[0], waiters[0]
		g.Expect(controllertest.AccessEntry(g, controllertest.GetWorkspace(g, keys[waiter]), endpointOf[waiter]).Message).To(HaveSuffix("/" + holder))
		g.Expect(controllertest.Condition(controllertest.GetWorkspace(g, keys[waiter]), workspacesv1.RoutesReadyCondition).Reason).To(Equal(workspacesv1.HostNameTakenReason))
		g.Expect(routesWithHost(g, host)).To(Equal([]string{"ws-" + holder + "/" + endpointOf[holder]}))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
}

// TestWorkspaceAccessHostNameOfExistingRoutes: the regional cluster's
// HTTPRoutes are the record of who holds a host name. A route delivered
// for a workspace (its owner labels) holds its host for that workspace, a
// route of another writer holds it too: a workspace whose endpoint needs
// either host waits, naming the holder. Once the holding workspace's route
// and the workspace go, the waiting one gets the host.
func TestWorkspaceAccessHostNameOfExistingRoutes(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "access-held")
	controllertest.RegionalSetup(t, ns, "c1")
	one := controllertest.AccessClass(t, ns, "web", controllertest.Endpoint("web", protoHTTP, 8888))
	sfx := ns[len(ns)-5:]
	holder, y, z := "old-"+sfx, "y-"+sfx, "z-"+sfx
	keyHolder := controllertest.CreateWorkspace(t, controllertest.NewWorkspace(ns, holder, one.Name, "nowhere"))

	g.Expect(controllertest.GatewayClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ws-" + holder}})).To(Succeed())
	owned := hostRoute("ws-"+holder, "web", y+"."+controllertest.TenantDomain, map[string]string{delivery.LabelOwnerKind: routesink.OwnerKind,
		delivery.LabelOwnerNamespace: ns, delivery.LabelOwnerName: holder})
	foreign := hostRoute(access.DefaultGatewayNamespace, "legacy-"+sfx, z+"."+controllertest.TenantDomain, nil)
	for _, r := range []*gatewayv1.HTTPRoute{owned, foreign} {
		g.Expect(controllertest.GatewayClient.Create(ctx, r)).To(Succeed())
		t.Cleanup(func() { _ = controllertest.GatewayClient.Delete(ctx, r) })
	}

	keyY := controllertest.CreateWorkspace(t, controllertest.NewWorkspace(ns, y, one.Name, "c1"))
	keyZ := controllertest.CreateWorkspace(t, controllertest.NewWorkspace(ns, z, one.Name, "c1"))
	for key, holder := range map[client.ObjectKey]string{keyY: "workspace " + ns + "/" + holder, keyZ: "HTTPRoute istio-system/legacy-" + sfx} {
		g.Eventually(func(g Gomega) {
			w := controllertest.GetWorkspace(g, key)
			e := controllertest.AccessEntry(g, w, "web")
			g.Expect(e.URL).To(BeEmpty())
			g.Expect(e.Message).To(Equal("host name " + key.Name + "." + controllertest.TenantDomain + " is held by " + holder))
			g.Expect(controllertest.Condition(w, workspacesv1.RoutesReadyCondition).Reason).To(Equal(workspacesv1.HostNameTakenReason))
		}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
	}

	g.Expect(controllertest.GatewayClient.Delete(ctx, owned)).To(Succeed())
	controllertest.DeleteWorkspace(t, keyHolder)
	g.Eventually(func(g Gomega) {
		g.Expect(controllertest.AccessEntry(g, controllertest.GetWorkspace(g, keyY), "web").URL).To(Equal("https://" + y + "." + controllertest.TenantDomain))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
	g.Expect(routesWithHost(g, y+"."+controllertest.TenantDomain)).To(Equal([]string{"ws-" + y + "/web"}))
}

// hostRoute is an HTTPRoute for a host name on the tenant Gateway.
func hostRoute(ns, name, host string, labels map[string]string) *gatewayv1.HTTPRoute {
	return &gatewayv1.HTTPRoute{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: gatewayv1.HTTPRouteSpec{CommonRouteSpec: gatewayv1.CommonRouteSpec{ParentRefs: []gatewayv1.ParentReference{{
			Name: access.DefaultGatewayName, Namespace: ptr.To(gatewayv1.Namespace(access.DefaultGatewayNamespace))}}},
			Hostnames: []gatewayv1.Hostname{gatewayv1.Hostname(host)}}}
}

// routesWithHost lists the HTTPRoutes of the regional cluster that name a
// host name, as namespace/name.
func routesWithHost(g Gomega, host string) []string {
	list := &gatewayv1.HTTPRouteList{}
	g.Expect(controllertest.GatewayClient.List(context.Background(), list)).To(Succeed())
	var out []string
	for _, r := range list.Items {
		for _, h := range r.Spec.Hostnames {
			if string(h) == host {
				out = append(out, r.Namespace+"/"+r.Name)
			}
		}
	}
	return out
}

// eventuallyRoutesReady waits for a workspace's RoutesReady to turn true.
func eventuallyRoutesReady(t *testing.T, key client.ObjectKey) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		w := controllertest.GetWorkspace(g, key)
		c := controllertest.Condition(w, workspacesv1.RoutesReadyCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s", c.Reason, c.Message)
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
}
