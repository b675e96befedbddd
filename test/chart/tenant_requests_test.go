package chart

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apitypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	"github.com/apiaryhq/apiary/examples"
	"github.com/apiaryhq/apiary/internal/testenv"
)

// tenantRequests makes real requests as c, a user bound to edit in own, and
// shows which the API server serves and which it refuses.
func tenantRequests(t *testing.T, c impersonated, own, other string) {
	g := NewWithT(t)
	ctx := context.Background()
	user := c.user
	mergePatch := func(s string) client.Patch { return client.RawPatch(apitypes.MergePatchType, []byte(s)) }

	ws := exampleObject(t, "quickstart/workspacedeployment.yaml", own)
	g.Expect(c.Create(ctx, ws)).To(Succeed(), "create a workspace in its namespace")
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), ws) })
	ws.SetLabels(map[string]string{"team": "a"})
	g.Expect(c.Update(ctx, ws)).To(Succeed(), "update it")
	g.Expect(c.Patch(ctx, ws, mergePatch(`{"metadata":{"annotations":{"owner":"a"}}}`))).To(Succeed(), "patch it")

	g.Expect(unstructured.SetNestedField(ws.Object, "Running", "status", "phase")).To(Succeed())
	g.Expect(c.Status().Update(ctx, ws)).To(refusedTo(user), "update its status")
	g.Expect(c.Status().Patch(ctx, ws, mergePatch(`{"status":{"phase":"Running"}}`))).To(refusedTo(user), "patch its status")
	g.Expect(c.Delete(ctx, ws)).To(Succeed(), "delete it")

	elsewhere := exampleObject(t, "quickstart/workspacedeployment.yaml", other)
	g.Expect(c.Create(ctx, elsewhere)).To(refusedTo(user), "create a workspace in another namespace")
	g.Expect(env.Client.Create(ctx, elsewhere)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), elsewhere) })
	g.Expect(c.Delete(ctx, elsewhere)).To(refusedTo(user), "delete a workspace in another namespace")

	for what, obj := range map[string]client.Object{
		"a ServiceSet":        &k0rdentv1beta1.ServiceSet{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: own}},
		"a ClusterDeployment": &k0rdentv1beta1.ClusterDeployment{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: own}},
		"a Colony":            exampleObject(t, "quickstart/colony.yaml", own),
		"a TenantQuota":       quotaExample(t),
	} {
		g.Expect(c.Create(ctx, obj)).To(refusedTo(user), "create %s", what)
	}

	nsPatch := mergePatch(`{"metadata":{"labels":{"apiary.dev/tenant":"someone-else"}}}`)
	g.Expect(c.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: own}}, nsPatch)).To(refusedTo(user),
		"patch its namespace's labels")
	g.Expect(c.Get(ctx, client.ObjectKey{Name: own}, &corev1.Namespace{})).To(Succeed(), "view reads its own namespace")
}

// exampleObject decodes one object of examples/<file> and moves it to ns.
func exampleObject(t *testing.T, file, ns string) *unstructured.Unstructured {
	t.Helper()
	data, err := fs.ReadFile(examples.Quickstart, file)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := testenv.DecodeObjects(data)
	if err != nil || len(objs) != 1 {
		t.Fatalf("decoding examples/%s: %d objects, %v", file, len(objs), err)
	}
	objs[0].SetNamespace(ns)
	return objs[0]
}

// quotaExample is the TenantQuota of examples/quota.
func quotaExample(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	objs, err := testenv.ReadObjects(filepath.Join(testenv.RepoRoot(), "examples", "quota", "tenantquota.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if o.GetKind() == "TenantQuota" {
			return o
		}
	}
	t.Fatal("examples/quota/tenantquota.yaml has no TenantQuota")
	return nil
}

// refusedTo matches the API server's RBAC refusal of a request by user.
func refusedTo(user string) types.GomegaMatcher {
	return And(Satisfy(apierrors.IsForbidden), MatchError(ContainSubstring(fmt.Sprintf("User %q cannot", user))))
}

// beForbidden matches a refused request.
func beForbidden() types.GomegaMatcher { return Satisfy(apierrors.IsForbidden) }

// impersonated is a client that acts as user, through impersonation by the
// administrator.
type impersonated struct {
	client.Client
	user string
}

// impersonate returns a client that acts as user, an authenticated user of no group.
func impersonate(t *testing.T, user string) impersonated {
	t.Helper()
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:authenticated"}}
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatalf("creating a client for %s: %v", user, err)
	}
	return impersonated{Client: c, user: user}
}

// bindInNamespace binds user to the ClusterRole role in ns with a RoleBinding.
func bindInNamespace(t *testing.T, ns, role, user string) {
	t.Helper()
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user + "-" + role, Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: user}}}
	if err := env.Client.Create(context.Background(), rb); err != nil {
		t.Fatalf("binding %s to %s in %s: %v", user, role, ns, err)
	}
}

// allowed asks the API server, as c's user, whether it may do a.
func allowed(g Gomega, c client.Client, a authorizationv1.ResourceAttributes) bool {
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &a}}
	g.Expect(c.Create(context.Background(), review)).To(Succeed())
	return review.Status.Allowed
}
