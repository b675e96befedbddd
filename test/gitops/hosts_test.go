package gitops_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/access"
	"github.com/apiaryhq/apiary/test/world/builder"
)

// TestWorkspaceHostNameHeldByOneThroughGit: in Git mode the routes reach
// the regional cluster only when Flux applies them, so the workspaces'
// status is the record of who holds a host name. Workspace nb, whose class
// has a second HTTP endpoint api, holds nb-api.<domain>; workspace nb-api
// waits with HostNameTaken naming it, and no route of its for the host is
// committed. Once nb is deleted, nb-api gets the host and its route is
// committed.
func TestWorkspaceHostNameHeldByOneThroughGit(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "gitops-hosts")
	k0rdentFixtures(t, ns)
	readyCluster(t, ns, "regional", map[string]string{access.ClusterNameLabel: "region-1", access.ClusterRoleLabel: access.RoleRegional},
		map[string]string{regionalAnnotation: "true"})
	readyCluster(t, ns, "gpu", map[string]string{access.RegionalClusterNameLabel: "region-1"}, nil)
	class := func(name string, endpoints ...string) string {
		c := builder.NewClass(ns, name, builder.Named(name+"-"+ns))
		for i, e := range endpoints {
			c.Spec.AccessEndpoints = append(c.Spec.AccessEndpoints,
				workspacesv1.AccessEndpoint{Name: e, Protocol: workspacesv1.AccessProtocolHTTP, Port: int32(8000 + i)})
		}
		g.Expect(env.Client.Create(ctx, c)).To(Succeed())
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), c) })
		return c.Name
	}
	two, one := class("web-api", "web", "api"), class("web", "web")
	nb := "nb-" + ns[len(ns)-5:]
	nbAPI := nb + "-api"
	host := nbAPI + "." + tenantDomain
	newWorkspace := func(name, class string) *workspacesv1.WorkspaceDeployment {
		w := builder.Workspace(ns, name, class, "gpu")
		g.Expect(env.Client.Create(ctx, w)).To(Succeed())
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), w) })
		return w
	}
	folder := routesPath + "/" + ns + "/regional/"

	holder := newWorkspace(nb, two)
	g.Eventually(func(g Gomega) {
		w := &workspacesv1.WorkspaceDeployment{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(holder), w)).To(Succeed())
		g.Expect(w.Status.Access).To(ContainElement(And(HaveField("Name", "api"), HaveField("URL", "https://"+host))))
	}, timeout, 250*time.Millisecond).Should(Succeed())
	g.Eventually(func() string { return headFile(t, folder+"ws-"+nb+"/httproute/api.yaml") }, timeout, 250*time.Millisecond).
		Should(ContainSubstring(host))

	waiter := eventuallyReason(t, newWorkspace(nbAPI, one), workspacesv1.RoutesReadyCondition, workspacesv1.HostNameTakenReason)
	g.Expect(waiter.Status.Access).To(ConsistOf(And(HaveField("Name", "web"), HaveField("URL", ""),
		HaveField("Message", "host name "+host+" is held by workspace "+ns+"/"+nb))))
	g.Expect(headFile(t, folder+"ws-"+nbAPI+"/httproute/web.yaml")).To(BeEmpty(), "no route of the waiting workspace")

	g.Expect(env.Client.Delete(ctx, holder)).To(Succeed())
	eventuallyGone(t, holder)
	g.Eventually(func() string { return headFile(t, folder+"ws-"+nbAPI+"/httproute/web.yaml") }, timeout, 250*time.Millisecond).
		Should(ContainSubstring(host))
	g.Eventually(func(g Gomega) {
		w := &workspacesv1.WorkspaceDeployment{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(waiter), w)).To(Succeed())
		g.Expect(w.Status.Access).To(ConsistOf(HaveField("URL", "https://"+host)))
		g.Expect(w.Status.Routes.Hosts).To(Equal([]string{host}))
	}, timeout, 250*time.Millisecond).Should(Succeed())
}
