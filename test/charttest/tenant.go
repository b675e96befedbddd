package charttest

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TenantRoleRules are the rules of the chart's tenant ClusterRoles, by name
// suffix.
var TenantRoleRules = map[string][]rbacv1.PolicyRule{
	"-tenant-edit": {{APIGroups: []string{"workspaces.exalsius.ai"}, Resources: []string{"workspacedeployments"},
		Verbs: []string{"create", "update", "patch", "delete", "get", "list", "watch"}}},
	"-tenant-view": {{APIGroups: []string{"workspaces.exalsius.ai"}, Resources: []string{"workspacedeployments"},
		Verbs: []string{"get", "list", "watch"}}},
	"-workspaceclass-reader": {{APIGroups: []string{"workspaces.exalsius.ai"}, Resources: []string{"workspaceclasses"},
		Verbs: []string{"get", "list", "watch"}}, {APIGroups: []string{"workspaces.exalsius.ai"},
		Resources: []string{"workspacepriorityclasses"}, Verbs: []string{"get", "list", "watch"}}},
}

// ClassReader is the name suffix of the tenant ClusterRole that reads
// WorkspaceClasses, bound cluster-wide.
const ClassReader = "-workspaceclass-reader"

// TenantRoles returns the rendered tenant ClusterRoles by name suffix.
func TenantRoles(objs []*unstructured.Unstructured) (map[string]*rbacv1.ClusterRole, error) {
	out := map[string]*rbacv1.ClusterRole{}
	for _, o := range Find(objs, "ClusterRole") {
		for suffix := range TenantRoleRules {
			if !strings.HasSuffix(o.GetName(), suffix) {
				continue
			}
			role := &rbacv1.ClusterRole{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, role); err != nil {
				return nil, fmt.Errorf("ClusterRole %s: %w", o.GetName(), err)
			}
			out[suffix] = role
		}
	}
	return out, nil
}

// InstallTenantRoles renders the chart with its default values as release,
// creates its tenant ClusterRoles through c, deletes them when the test
// ends, and returns them by name suffix.
func InstallTenantRoles(t testing.TB, c client.Client, release string) map[string]*rbacv1.ClusterRole {
	t.Helper()
	g := NewWithT(t)
	ch, err := Load()
	g.Expect(err).NotTo(HaveOccurred())
	objs, err := Render(ch, release, release+"-system", nil)
	g.Expect(err).NotTo(HaveOccurred())
	roles, err := TenantRoles(objs)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(roles).To(HaveLen(len(TenantRoleRules)))
	for _, r := range roles {
		g.Expect(c.Create(context.Background(), r)).To(Succeed(), "creating ClusterRole %s", r.Name)
		role := r
		t.Cleanup(func() { _ = c.Delete(context.Background(), role) })
	}
	return roles
}

// AggregateBuiltins does what kube-controller-manager's ClusterRole
// aggregation controller does, which envtest does not run: it sets the
// rules of the API server's bootstrap view, edit and admin ClusterRoles to
// the union of the rules of the ClusterRoles their own aggregation rules
// select. view goes first and edit second, because edit selects view and
// admin selects edit through their labels. The old rules come back when the
// test ends.
func AggregateBuiltins(t testing.TB, c client.Client) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	for _, name := range []string{"view", "edit", "admin"} {
		role := &rbacv1.ClusterRole{}
		g.Expect(c.Get(ctx, client.ObjectKey{Name: name}, role)).To(Succeed(), "the API server's bootstrap ClusterRole %s", name)
		g.Expect(role.AggregationRule).NotTo(BeNil(), name)
		g.Expect(role.AggregationRule.ClusterRoleSelectors).NotTo(BeEmpty(), name)
		old := role.Rules
		var rules []rbacv1.PolicyRule
		for _, sel := range role.AggregationRule.ClusterRoleSelectors {
			s, err := metav1.LabelSelectorAsSelector(&sel)
			g.Expect(err).NotTo(HaveOccurred())
			list := &rbacv1.ClusterRoleList{}
			g.Expect(c.List(ctx, list, client.MatchingLabelsSelector{Selector: s})).To(Succeed())
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
		g.Expect(c.Update(ctx, role)).To(Succeed(), "aggregating %s", name)
		t.Cleanup(func() {
			r := &rbacv1.ClusterRole{}
			if err := c.Get(context.Background(), client.ObjectKey{Name: name}, r); err == nil {
				r.Rules = old
				_ = c.Update(context.Background(), r)
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

// Tenant is a client that acts as User, through impersonation by the
// administrator.
type Tenant struct {
	client.Client
	User string
}

// Impersonate returns a client of the administrator's cfg that acts as
// user, an authenticated user of no group.
func Impersonate(t testing.TB, cfg *rest.Config, scheme *runtime.Scheme, user string) Tenant {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatalf("creating a client for %s: %v", user, err)
	}
	return Tenant{Client: c, User: user}
}

// BindInNamespace binds user to the ClusterRole role in ns with a
// RoleBinding, through the administrator's c.
func BindInNamespace(t testing.TB, c client.Client, ns, role, user string) {
	t.Helper()
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user + "-" + role, Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}}}
	if err := c.Create(context.Background(), rb); err != nil {
		t.Fatalf("binding %s to %s in %s: %v", user, role, ns, err)
	}
}

// BindClusterWide binds user to the ClusterRole role with a
// ClusterRoleBinding, through the administrator's c, until the test ends.
func BindClusterWide(t testing.TB, c client.Client, role, user string) {
	t.Helper()
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{GenerateName: user + "-" + role + "-"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}}}
	if err := c.Create(context.Background(), crb); err != nil {
		t.Fatalf("binding %s to %s cluster-wide: %v", user, role, err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), crb) })
}

// Allowed asks the API server, as c's user, whether it may do a.
func Allowed(g Gomega, c client.Client, a authorizationv1.ResourceAttributes) bool {
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &a}}
	g.Expect(c.Create(context.Background(), review)).To(Succeed())
	return review.Status.Allowed
}

// RefusedTo matches the API server's RBAC refusal of a request by user.
func RefusedTo(user string) types.GomegaMatcher {
	return And(Satisfy(apierrors.IsForbidden), MatchError(ContainSubstring(fmt.Sprintf("User %q cannot", user))))
}
