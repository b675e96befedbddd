package hostile_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/access"
	"github.com/apiaryhq/apiary/test/standin"
	"github.com/apiaryhq/apiary/test/world/builder"
)

// Test6HostNameHasOneHolder: workspace nb's class has a second HTTP
// endpoint, api, published at nb-api.<domain> on the regional cluster's
// tenant Gateway. A tenant then creates a workspace named nb-api, whose
// primary endpoint wants the same host name, to take over nb's traffic.
// nb keeps the host; nb-api waits with HostNameTaken naming nb, and the
// regional cluster has one HTTPRoute for the host, nb's.
func Test6HostNameHasOneHolder(t *testing.T) {
	g := NewWithT(t)
	ns := env.NewNamespace(t, "hosts")
	builder.Templates(t, env.Client, ns)
	reg := standin.NewClusterDeployment(ns, "regional", "tpl", "cred")
	reg.Labels = map[string]string{access.ClusterNameLabel: "region-" + ns, access.ClusterRoleLabel: access.RoleRegional}
	reg.Annotations = map[string]string{annotationRegional: "true"}
	builder.CreateReady(t, env.Client, reg)
	gpu := standin.NewClusterDeployment(ns, "gpu", "tpl", "cred")
	gpu.Labels = map[string]string{access.RegionalClusterNameLabel: "region-" + ns}
	builder.CreateReady(t, env.Client, gpu)
	endpoints := func(names ...string) func(*workspacesv1.WorkspaceClass) {
		return func(c *workspacesv1.WorkspaceClass) {
			c.Name += "-" + strings.Join(names, "-")
			for i, e := range names {
				c.Spec.AccessEndpoints = append(c.Spec.AccessEndpoints,
					workspacesv1.AccessEndpoint{Name: e, Protocol: workspacesv1.AccessProtocolHTTP, Port: int32(8000 + i)})
			}
		}
	}
	two, one := class(t, ns, endpoints("web", "api")), class(t, ns, endpoints("web"))
	nb := "nb-" + ns[len(ns)-5:]
	nbAPI := nb + "-api"
	host := nbAPI + "." + tenantDomain

	holder := workspace(ns, nb, two, "gpu")
	create(t, holder)
	g.Eventually(func(g Gomega) {
		w := get(g, holder)
		g.Expect(w.Status.Access).To(ContainElement(And(HaveField("Name", "api"), HaveField("URL", "https://"+host))),
			"phase %s: %s; %v", w.Status.Phase, w.Status.Message, w.Status.Conditions)
	}).WithTimeout(timeout).WithPolling(250 * time.Millisecond).Should(Succeed())

	taker := workspace(ns, nbAPI, one, "gpu")
	create(t, taker)
	held := "host name " + host + " is held by workspace " + ns + "/" + nb
	g.Eventually(func(g Gomega) {
		w := get(g, taker)
		c := condition(w, workspacesv1.RoutesReadyCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal(workspacesv1.HostNameTakenReason), c.Message)
		g.Expect(c.Message).To(ContainSubstring(held))
		g.Expect(w.Status.Access).To(ConsistOf(And(HaveField("Name", "web"), HaveField("URL", ""), HaveField("Message", held))))
	}).WithTimeout(timeout).WithPolling(250 * time.Millisecond).Should(Succeed())
	t.Logf("the taker: %s", condition(get(g, taker), workspacesv1.RoutesReadyCondition).Message)
	g.Consistently(func(g Gomega) {
		g.Expect(routesWithHost(g, host)).To(Equal([]string{"ws-" + nb + "/api"}), "one HTTPRoute holds the host")
		g.Expect(get(g, holder).Status.Access).To(ContainElement(And(HaveField("Name", "api"), HaveField("URL", "https://"+host))))
	}).WithTimeout(3 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
}

// routesWithHost lists the HTTPRoutes of the regional cluster that serve
// host, as namespace/name.
func routesWithHost(g Gomega, host string) []string {
	list := &gatewayv1.HTTPRouteList{}
	g.Expect(regionalClient.List(context.Background(), list)).To(Succeed())
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
