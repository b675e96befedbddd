package controller_test

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
	ns := env.NewNamespace(t, "access-hosts")
	regionalSetup(t, ns, "c1")
	two := accessClass(t, ns, "web-api", endpoint("web", protoHTTP, 8888), endpoint("api", protoHTTP, 8000))
	one := accessClass(t, ns, "web", endpoint("web", protoHTTP, 8888))
	nb := "nb-" + ns[len(ns)-5:]
	nbAPI := nb + "-api"
	host := nbAPI + "." + tenantDomain

	keyNB := createWorkspace(t, workspace(ns, nb, two.Name, "c1"))
	eventuallyRunning(t, keyNB)
	g.Eventually(func(g Gomega) { acceptRoutes(g, nb) }, timeout, 200*time.Millisecond).Should(Succeed())
	eventuallyRoutesReady(t, keyNB)
	g.Expect(accessEntry(g, getWorkspace(g, keyNB), "api").URL).To(Equal("https://" + host))

	keyAPI := createWorkspace(t, workspace(ns, nbAPI, one.Name, "c1"))
	eventuallyRunning(t, keyAPI)
	held := "host name " + host + " is held by workspace " + ns + "/" + nb
	g.Eventually(func(g Gomega) {
		w := getWorkspace(g, keyAPI)
		e := accessEntry(g, w, "web")
		g.Expect(e.URL).To(BeEmpty())
		g.Expect(e.Ready).To(BeFalse())
		g.Expect(e.Message).To(Equal(held))
		c := condition(w, workspacesv1.RoutesReadyCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(workspacesv1.HostNameTakenReason))
		g.Expect(c.Message).To(ContainSubstring("web: " + held))
		g.Expect(w.Status.Routes.Hosts).To(BeEmpty())
	}, timeout, 200*time.Millisecond).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(routesWithHost(g, host)).To(Equal([]string{"ws-" + nb + "/api"}), "one HTTPRoute holds the host")
		w := getWorkspace(g, keyNB)
		g.Expect(conditionStatus(w, workspacesv1.RoutesReadyCondition)).To(Equal(metav1.ConditionTrue))
		g.Expect(accessEntry(g, w, "api").URL).To(Equal("https://" + host))
	}, 2*time.Second, 200*time.Millisecond).Should(Succeed())

	// A steady holder costs no request of the regional cluster's routes.
	mark := requests.mark()
	w := getWorkspace(g, keyNB)
	patch := client.MergeFrom(w.DeepCopy())
	w.Annotations = map[string]string{meta.ReconcileRequestAnnotation: time.Now().String()}
	g.Expect(env.Client.Patch(ctx, w, patch)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(getWorkspace(g, keyNB).Status.LastHandledReconcileAt).To(Equal(w.Annotations[meta.ReconcileRequestAnnotation]))
	}, timeout, 200*time.Millisecond).Should(Succeed())
	time.Sleep(time.Second)
	g.Expect(requests.since(mark, func(r apiRequest) bool { return r.side == "child" && r.resource == "httproutes" })).To(BeEmpty())

	// The holder goes: its routes first, then the waiting workspace gets the host.
	deleteWorkspace(t, keyNB)
	g.Eventually(func(g Gomega) {
		g.Expect(routesWithHost(g, host)).To(Equal([]string{"ws-" + nbAPI + "/web"}))
	}, timeout, 200*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) { acceptRoutes(g, nbAPI) }, timeout, 200*time.Millisecond).Should(Succeed())
	eventuallyRoutesReady(t, keyAPI)
	w = getWorkspace(g, keyAPI)
	g.Expect(accessEntry(g, w, "web").URL).To(Equal("https://" + host))
	g.Expect(w.Status.Routes.Hosts).To(Equal([]string{host}))
}

// TestWorkspaceAccessHostNameRace creates both workspaces of
// TestWorkspaceAccessHostNameHeldByOne at once: whichever claims the host
// first holds it, and the other waits naming it.
func TestWorkspaceAccessHostNameRace(t *testing.T) {
	g := NewWithT(t)
	ns := env.NewNamespace(t, "access-race")
	regionalSetup(t, ns, "c1")
	two := accessClass(t, ns, "web-api", endpoint("web", protoHTTP, 8888), endpoint("api", protoHTTP, 8000))
	one := accessClass(t, ns, "web", endpoint("web", protoHTTP, 8888))
	nb := "nb-" + ns[len(ns)-5:]
	nbAPI := nb + "-api"
	host := nbAPI + "." + tenantDomain
	keys := map[string]client.ObjectKey{
		nb:    createWorkspace(t, workspace(ns, nb, two.Name, "c1")),
		nbAPI: createWorkspace(t, workspace(ns, nbAPI, one.Name, "c1")),
	}
	endpointOf := map[string]string{nb: "api", nbAPI: "web"}
	g.Eventually(func(g Gomega) {
		var holders, waiters []string
		for name, key := range keys {
			e := accessEntry(g, getWorkspace(g, key), endpointOf[name])
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
		g.Expect(accessEntry(g, getWorkspace(g, keys[waiter]), endpointOf[waiter]).Message).To(HaveSuffix("/" + holder))
		g.Expect(condition(getWorkspace(g, keys[waiter]), workspacesv1.RoutesReadyCondition).Reason).To(Equal(workspacesv1.HostNameTakenReason))
		g.Expect(routesWithHost(g, host)).To(Equal([]string{"ws-" + holder + "/" + endpointOf[holder]}))
	}, timeout, 200*time.Millisecond).Should(Succeed())
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
	ns := env.NewNamespace(t, "access-held")
	regionalSetup(t, ns, "c1")
	one := accessClass(t, ns, "web", endpoint("web", protoHTTP, 8888))
	sfx := ns[len(ns)-5:]
	holder, y, z := "old-"+sfx, "y-"+sfx, "z-"+sfx
	keyHolder := createWorkspace(t, workspace(ns, holder, one.Name, "nowhere"))

	g.Expect(gwClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ws-" + holder}})).To(Succeed())
	owned := hostRoute("ws-"+holder, "web", y+"."+tenantDomain, map[string]string{delivery.LabelOwnerKind: routesink.OwnerKind,
		delivery.LabelOwnerNamespace: ns, delivery.LabelOwnerName: holder})
	foreign := hostRoute(access.DefaultGatewayNamespace, "legacy-"+sfx, z+"."+tenantDomain, nil)
	for _, r := range []*gatewayv1.HTTPRoute{owned, foreign} {
		g.Expect(gwClient.Create(ctx, r)).To(Succeed())
		t.Cleanup(func() { _ = gwClient.Delete(ctx, r) })
	}

	keyY := createWorkspace(t, workspace(ns, y, one.Name, "c1"))
	keyZ := createWorkspace(t, workspace(ns, z, one.Name, "c1"))
	for key, holder := range map[client.ObjectKey]string{keyY: "workspace " + ns + "/" + holder, keyZ: "HTTPRoute istio-system/legacy-" + sfx} {
		g.Eventually(func(g Gomega) {
			w := getWorkspace(g, key)
			e := accessEntry(g, w, "web")
			g.Expect(e.URL).To(BeEmpty())
			g.Expect(e.Message).To(Equal("host name " + key.Name + "." + tenantDomain + " is held by " + holder))
			g.Expect(condition(w, workspacesv1.RoutesReadyCondition).Reason).To(Equal(workspacesv1.HostNameTakenReason))
		}, timeout, 200*time.Millisecond).Should(Succeed())
	}

	g.Expect(gwClient.Delete(ctx, owned)).To(Succeed())
	deleteWorkspace(t, keyHolder)
	g.Eventually(func(g Gomega) {
		g.Expect(accessEntry(g, getWorkspace(g, keyY), "web").URL).To(Equal("https://" + y + "." + tenantDomain))
	}, timeout, 200*time.Millisecond).Should(Succeed())
	g.Expect(routesWithHost(g, y+"."+tenantDomain)).To(Equal([]string{"ws-" + y + "/web"}))
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
	g.Expect(gwClient.List(context.Background(), list)).To(Succeed())
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
		w := getWorkspace(g, key)
		c := condition(w, workspacesv1.RoutesReadyCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s", c.Reason, c.Message)
	}, timeout, 200*time.Millisecond).Should(Succeed())
}
