package chart

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The labels that Kubernetes' built-in edit and view ClusterRoles aggregate.
const (
	aggregateToEdit = "rbac.authorization.k8s.io/aggregate-to-edit"
	aggregateToView = "rbac.authorization.k8s.io/aggregate-to-view"
)

// The rules of the chart's tenant ClusterRoles, by name suffix.
var tenantRoleRules = map[string][]rbacv1.PolicyRule{
	"-tenant-edit": {{APIGroups: []string{"workspaces.exalsius.ai"}, Resources: []string{"workspacedeployments"},
		Verbs: []string{"create", "update", "patch", "delete", "get", "list", "watch"}}},
	"-tenant-view": {{APIGroups: []string{"workspaces.exalsius.ai"}, Resources: []string{"workspacedeployments"},
		Verbs: []string{"get", "list", "watch"}}},
	"-workspaceclass-reader": {{APIGroups: []string{"workspaces.exalsius.ai"}, Resources: []string{"workspaceclasses"},
		Verbs: []string{"get", "list", "watch"}}},
}

// tenantRoles returns the rendered tenant ClusterRoles by name suffix.
func tenantRoles(g Gomega, objs []*unstructured.Unstructured) map[string]*rbacv1.ClusterRole {
	out := map[string]*rbacv1.ClusterRole{}
	for _, o := range find(objs, "ClusterRole") {
		for suffix := range tenantRoleRules {
			if strings.HasSuffix(o.GetName(), suffix) {
				out[suffix] = convert[rbacv1.ClusterRole](g, o)
			}
		}
	}
	return out
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
			g.Expect(roles).To(HaveLen(len(tenantRoleRules)))
			for suffix, role := range roles {
				g.Expect(role.Name).To(Equal(releaseName + suffix))
				g.Expect(role.Rules).To(Equal(tenantRoleRules[suffix]), role.Name)
				g.Expect(role.AggregationRule).To(BeNil(), role.Name)
				var agg []string
				for k, v := range role.Labels {
					if strings.HasPrefix(k, "rbac.authorization.k8s.io/") {
						g.Expect(v).To(Equal("true"), "%s label %s", role.Name, k)
						agg = append(agg, k)
					}
				}
				g.Expect(agg).To(ConsistOf(tt.labels[suffix]), role.Name)
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
// own (bootstrap) edit, view and admin ClusterRoles. aggregateBuiltins does
// it with their real aggregation rules, so that the tenant is bound as in a
// cluster and the chart's labels are matched by Kubernetes' own selectors.
func TestTenantRBACOnAPIServer(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	objs, err := render(loadChart(t), "tenants", releaseNamespace, nil)
	g.Expect(err).NotTo(HaveOccurred())
	roles := tenantRoles(g, objs)
	g.Expect(roles).To(HaveLen(len(tenantRoleRules)))
	for _, r := range roles {
		g.Expect(env.Client.Create(ctx, r)).To(Succeed(), "creating ClusterRole %s", r.Name)
		role := r
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), role) })
	}
	own, other := env.NewNamespace(t, "tenant-a"), env.NewNamespace(t, "tenant-b")
	bindInNamespace(t, own, "edit", "alice")
	bindInNamespace(t, own, "view", "victor")
	bindInNamespace(t, own, "admin", "ada")
	alice, victor, ada := impersonate(t, "alice"), impersonate(t, "victor"), impersonate(t, "ada")
	wsd := func(verb, ns string) authorizationv1.ResourceAttributes {
		return authorizationv1.ResourceAttributes{Group: "workspaces.exalsius.ai", Resource: "workspacedeployments", Verb: verb, Namespace: ns}
	}

	// Bound to edit, alice gets nothing from the chart until its roles are
	// aggregated into edit: the grants below come through aggregation.
	g.Expect(allowed(g, alice, wsd("create", own))).To(BeFalse())
	aggregateBuiltins(t)
	g.Eventually(func() bool { return allowed(g, alice, wsd("create", own)) }).WithTimeout(30 * time.Second).Should(BeTrue())

	t.Run("access reviews", func(t *testing.T) {
		g := NewWithT(t)
		for _, verb := range []string{"create", "update", "patch", "delete", "get", "list", "watch"} {
			g.Expect(allowed(g, alice, wsd(verb, own))).To(BeTrue(), "edit: %s workspacedeployments", verb)
			g.Expect(allowed(g, alice, wsd(verb, other))).To(BeFalse(), "edit: %s workspacedeployments in another namespace", verb)
			g.Expect(allowed(g, ada, wsd(verb, own))).To(BeTrue(), "admin (aggregates edit): %s workspacedeployments", verb)
			readOnly := verb == "get" || verb == "list" || verb == "watch"
			g.Expect(allowed(g, victor, wsd(verb, own))).To(Equal(readOnly), "view: %s workspacedeployments", verb)
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
				g.Expect(allowed(g, c, a)).To(BeFalse(), "%s: %+v", name, a)
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
		crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{GenerateName: "tenants-read-classes-"},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: roles["-workspaceclass-reader"].Name},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "alice"}}}
		g.Expect(env.Client.Create(ctx, crb)).To(Succeed())
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), crb) })
		g.Eventually(list).WithTimeout(30 * time.Second).Should(Succeed())
		for _, verb := range []string{"get", "list", "watch"} {
			g.Expect(allowed(g, alice, authorizationv1.ResourceAttributes{Group: "workspaces.exalsius.ai", Resource: "workspaceclasses", Verb: verb})).To(BeTrue(), verb)
		}
		for _, verb := range []string{"create", "update", "patch", "delete"} {
			g.Expect(allowed(g, alice, authorizationv1.ResourceAttributes{Group: "workspaces.exalsius.ai", Resource: "workspaceclasses", Verb: verb})).To(BeFalse(), verb)
		}
		g.Expect(allowed(g, alice, authorizationv1.ResourceAttributes{Group: "workspaces.exalsius.ai", Resource: "workspacedeployments", Verb: "list", Namespace: other})).To(BeFalse(),
			"the class reader grants no workspace anywhere")
	})
}

// aggregateBuiltins does what kube-controller-manager's ClusterRole
// aggregation controller does: it sets the rules of the API server's
// bootstrap view, edit and admin ClusterRoles to the union of the rules of
// the ClusterRoles their own aggregation rules select. view goes first and
// edit second, because edit selects view and admin selects edit through
// their labels. The old rules come back when the test ends.
func aggregateBuiltins(t *testing.T) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	for _, name := range []string{"view", "edit", "admin"} {
		role := &rbacv1.ClusterRole{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, role)).To(Succeed(), "the API server's bootstrap ClusterRole %s", name)
		g.Expect(role.AggregationRule).NotTo(BeNil(), name)
		g.Expect(role.AggregationRule.ClusterRoleSelectors).NotTo(BeEmpty(), name)
		old := role.Rules
		var rules []rbacv1.PolicyRule
		for _, sel := range role.AggregationRule.ClusterRoleSelectors {
			s, err := metav1.LabelSelectorAsSelector(&sel)
			g.Expect(err).NotTo(HaveOccurred())
			list := &rbacv1.ClusterRoleList{}
			g.Expect(env.Client.List(ctx, list, client.MatchingLabelsSelector{Selector: s})).To(Succeed())
			sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
			for _, r := range list.Items {
				if r.Name == name {
					continue
				}
				for _, rule := range r.Rules {
					if !containsRule(rules, rule) {
						rules = append(rules, rule)
					}
				}
			}
		}
		role.Rules = rules
		g.Expect(env.Client.Update(ctx, role)).To(Succeed(), "aggregating %s", name)
		t.Cleanup(func() {
			r := &rbacv1.ClusterRole{}
			if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, r); err == nil {
				r.Rules = old
				_ = env.Client.Update(context.Background(), r)
			}
		})
	}
}

// containsRule reports whether rules holds rule.
func containsRule(rules []rbacv1.PolicyRule, rule rbacv1.PolicyRule) bool {
	for _, r := range rules {
		if apiequality.Semantic.DeepEqual(r, rule) {
			return true
		}
	}
	return false
}
