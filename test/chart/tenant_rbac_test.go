package chart

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apiaryhq/apiary/test/charttest"
	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The labels that Kubernetes' built-in edit and view ClusterRoles aggregate.
const (
	aggregateToEdit = "rbac.authorization.k8s.io/aggregate-to-edit"
	aggregateToView = "rbac.authorization.k8s.io/aggregate-to-view"
)

// tenantRoles returns the rendered tenant ClusterRoles by name suffix.
func tenantRoles(g Gomega, objs []*unstructured.Unstructured) map[string]*rbacv1.ClusterRole {
	roles, err := charttest.TenantRoles(objs)
	g.Expect(err).NotTo(HaveOccurred())
	return roles
}

// managerRole returns the rendered manager ClusterRole.
func managerRole(g Gomega, objs []*unstructured.Unstructured) *rbacv1.ClusterRole {
	for _, o := range find(objs, "ClusterRole") {
		if strings.HasSuffix(o.GetName(), "-manager") {
			return convert[rbacv1.ClusterRole](g, o)
		}
	}
	g.Expect("a ClusterRole <fullname>-manager").To(BeEmpty(), "not rendered")
	return nil
}

// TestTenantRolesRender: the tenant ClusterRoles grant exactly their
// workspace rules, carry the aggregation labels the values ask for, and
// are left out when tenantRBAC.enabled is false, independently of rbac.create.
func TestTenantRolesRender(t *testing.T) {
	tests := []struct {
		name string
		vals map[string]any
		// labels are the aggregation labels of each role; nil when no tenant role renders.
		labels map[string][]string
	}{
		{name: "defaults", labels: map[string][]string{
			"-tenant-edit": {aggregateToEdit}, "-tenant-view": {aggregateToView}, "-workspaceclass-reader": nil}},
		{name: "not aggregated to edit", vals: map[string]any{"tenantRBAC": map[string]any{"aggregateToEdit": false}},
			labels: map[string][]string{"-tenant-edit": nil, "-tenant-view": {aggregateToView}, "-workspaceclass-reader": nil}},
		{name: "not aggregated to view", vals: map[string]any{"tenantRBAC": map[string]any{"aggregateToView": false}},
			labels: map[string][]string{"-tenant-edit": {aggregateToEdit}, "-tenant-view": nil, "-workspaceclass-reader": nil}},
		{name: "without the manager's RBAC", vals: map[string]any{"rbac": map[string]any{"create": false}},
			labels: map[string][]string{"-tenant-edit": {aggregateToEdit}, "-tenant-view": {aggregateToView}, "-workspaceclass-reader": nil}},
		{name: "disabled", vals: map[string]any{"tenantRBAC": map[string]any{"enabled": false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			objs, err := render(loadChart(t), releaseName, releaseNamespace, tt.vals)
			g.Expect(err).NotTo(HaveOccurred())
			roles := tenantRoles(g, objs)
			if tt.labels == nil {
				g.Expect(roles).To(BeEmpty())
				return
			}
			g.Expect(roles).To(HaveLen(len(charttest.TenantRoleRules)))
			for suffix, role := range roles {
				g.Expect(role.Name).To(Equal(releaseName + suffix))
				g.Expect(role.Rules).To(Equal(charttest.TenantRoleRules[suffix]), role.Name)
				g.Expect(role.AggregationRule).To(BeNil(), role.Name)
				var agg []string
				for k, v := range role.Labels {
					if strings.HasPrefix(k, "rbac.authorization.k8s.io/") {
						g.Expect(v).To(Equal("true"), "%s label %s", role.Name, k)
						agg = append(agg, k)
					}
				}
				g.Expect(agg).To(ConsistOf(tt.labels[suffix]), role.Name)
				// A tenant's role is not the manager's: a selector on the
				// manager's component must not find it.
				g.Expect(role.Labels).To(HaveKeyWithValue("app.kubernetes.io/component", "tenant-access"), role.Name)
			}
		})
	}

	g := NewWithT(t)
	for _, bad := range []map[string]any{{"aggregateToAdmin": true}, {"enabled": "yes"}} {
		_, err := render(loadChart(t), releaseName, releaseNamespace, map[string]any{"tenantRBAC": bad})
		g.Expect(err).To(MatchError(ContainSubstring("tenantRBAC")), "%v", bad)
	}

	// `helm show readme` prints the chart's README.md, which says how to bind them.
	readme := ""
	for _, f := range loadChart(t).Files {
		if f.Name == "README.md" {
			readme = string(f.Data)
		}
	}
	g.Expect(readme).To(And(ContainSubstring("## Tenant access"), ContainSubstring("--clusterrole=apiary-workspaceclass-reader")))
}

// TestTenantRBACOnAPIServer installs the chart's tenant ClusterRoles into a
// real API server, binds a tenant to the built-in edit ClusterRole in one
// namespace and shows, by SelfSubjectAccessReview and by real requests made
// as the tenant, what that allows and refuses.
//
// envtest runs no kube-controller-manager, so nothing fills the API server's
// own (bootstrap) edit, view and admin ClusterRoles. charttest.AggregateBuiltins
// does it with their real aggregation rules, so that the tenant is bound as in
// a cluster and the chart's labels are matched by Kubernetes' own selectors.
func TestTenantRBACOnAPIServer(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	roles := charttest.InstallTenantRoles(t, env.Client, "tenants")
	own, other := env.NewNamespace(t, "tenant-a"), env.NewNamespace(t, "tenant-b")
	charttest.BindInNamespace(t, env.Client, own, "edit", "alice")
	charttest.BindInNamespace(t, env.Client, own, "view", "victor")
	charttest.BindInNamespace(t, env.Client, own, "admin", "ada")
	alice, victor, ada := impersonate(t, "alice"), impersonate(t, "victor"), impersonate(t, "ada")
	wsd := func(verb, ns string) authorizationv1.ResourceAttributes {
		return authorizationv1.ResourceAttributes{Group: "workspaces.exalsius.ai", Resource: "workspacedeployments", Verb: verb, Namespace: ns}
	}

	// Bound to edit, alice gets nothing from the chart until its roles are
	// aggregated into edit: the grants below come through aggregation.
	g.Expect(charttest.Allowed(g, alice, wsd("create", own))).To(BeFalse())
	charttest.AggregateBuiltins(t, env.Client)
	g.Eventually(func() bool { return charttest.Allowed(g, alice, wsd("create", own)) }).WithTimeout(30 * time.Second).Should(BeTrue())

	t.Run("access reviews", func(t *testing.T) {
		g := NewWithT(t)
		for _, verb := range []string{"create", "update", "patch", "delete", "get", "list", "watch"} {
			g.Expect(charttest.Allowed(g, alice, wsd(verb, own))).To(BeTrue(), "edit: %s workspacedeployments", verb)
			g.Expect(charttest.Allowed(g, alice, wsd(verb, other))).To(BeFalse(), "edit: %s workspacedeployments in another namespace", verb)
			g.Expect(charttest.Allowed(g, ada, wsd(verb, own))).To(BeTrue(), "admin (aggregates edit): %s workspacedeployments", verb)
			readOnly := verb == "get" || verb == "list" || verb == "watch"
			g.Expect(charttest.Allowed(g, victor, wsd(verb, own))).To(Equal(readOnly), "view: %s workspacedeployments", verb)
		}
		refused := []authorizationv1.ResourceAttributes{
			{Group: "workspaces.exalsius.ai", Resource: "workspacedeployments", Subresource: "status", Verb: "update", Namespace: own},
			{Group: "workspaces.exalsius.ai", Resource: "workspacedeployments", Subresource: "status", Verb: "patch", Namespace: own},
			{Group: "workspaces.exalsius.ai", Resource: "workspacedeployments", Subresource: "finalizers", Verb: "update", Namespace: own},
			{Group: "workspaces.exalsius.ai", Resource: "workspaceclasses", Verb: "create"},
			{Group: "workspaces.exalsius.ai", Resource: "workspaceclasses", Verb: "list"},
			{Group: "k0rdent.mirantis.com", Resource: "servicesets", Verb: "create", Namespace: own},
			{Group: "k0rdent.mirantis.com", Resource: "clusterdeployments", Verb: "create", Namespace: own},
			{Group: "k0rdent.mirantis.com", Resource: "clusterdeployments", Verb: "list", Namespace: own},
			{Group: "infra.exalsius.ai", Resource: "colonies", Verb: "create", Namespace: own},
			{Group: "infra.exalsius.ai", Resource: "colonies", Verb: "list", Namespace: own},
			{Group: "quota.apiary.dev", Resource: "tenantquotas", Verb: "create"},
			{Group: "quota.apiary.dev", Resource: "tenantquotas", Verb: "list"},
			{Resource: "namespaces", Verb: "patch", Namespace: own, Name: own},
			{Resource: "namespaces", Verb: "update", Namespace: own, Name: own},
		}
		for _, a := range refused {
			for name, c := range map[string]client.Client{"alice (edit)": alice, "ada (admin)": ada} {
				g.Expect(charttest.Allowed(g, c, a)).To(BeFalse(), "%s: %+v", name, a)
			}
		}
	})

	t.Run("requests", func(t *testing.T) {
		tenantRequests(t, alice, own, other)
	})

	t.Run("WorkspaceClasses with the reader bound cluster-wide", func(t *testing.T) {
		g := NewWithT(t)
		list := func() error {
			return alice.List(ctx, &unstructured.UnstructuredList{Object: map[string]any{
				"apiVersion": "workspaces.exalsius.ai/v1", "kind": "WorkspaceClassList"}})
		}
		g.Expect(list()).To(beForbidden(), "no class reader bound yet")
		charttest.BindClusterWide(t, env.Client, roles[charttest.ClassReader].Name, "alice")
		g.Eventually(list).WithTimeout(30 * time.Second).Should(Succeed())
		for _, verb := range []string{"get", "list", "watch"} {
			g.Expect(charttest.Allowed(g, alice, authorizationv1.ResourceAttributes{Group: "workspaces.exalsius.ai", Resource: "workspaceclasses", Verb: verb})).To(BeTrue(), verb)
		}
		for _, verb := range []string{"create", "update", "patch", "delete"} {
			g.Expect(charttest.Allowed(g, alice, authorizationv1.ResourceAttributes{Group: "workspaces.exalsius.ai", Resource: "workspaceclasses", Verb: verb})).To(BeFalse(), verb)
		}
		g.Expect(charttest.Allowed(g, alice, authorizationv1.ResourceAttributes{Group: "workspaces.exalsius.ai", Resource: "workspacedeployments", Verb: "list", Namespace: other})).To(BeFalse(),
			"the class reader grants no workspace anywhere")
	})
}
