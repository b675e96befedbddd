package chart

import (
	"context"
	"io/fs"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apitypes "k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	"github.com/apiaryhq/apiary/examples"
	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/test/charttest"
)

// tenantRequests makes real requests as c, a user bound to edit in own, and
// shows which the API server serves and which it refuses.
func tenantRequests(t *testing.T, c charttest.Tenant, own, other string) {
	g := NewWithT(t)
	ctx := context.Background()
	user := c.User
	mergePatch := func(s string) client.Patch { return client.RawPatch(apitypes.MergePatchType, []byte(s)) }

	ws := exampleObject(t, "quickstart/workspacedeployment.yaml", own)
	g.Expect(c.Create(ctx, ws)).To(Succeed(), "create a workspace in its namespace")
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), ws) })
	ws.SetLabels(map[string]string{"team": "a"})
	g.Expect(c.Update(ctx, ws)).To(Succeed(), "update it")
	g.Expect(c.Patch(ctx, ws, mergePatch(`{"metadata":{"annotations":{"owner":"a"}}}`))).To(Succeed(), "patch it")

	g.Expect(unstructured.SetNestedField(ws.Object, "Running", "status", "phase")).To(Succeed())
	g.Expect(c.Status().Update(ctx, ws)).To(charttest.RefusedTo(user), "update its status")
	g.Expect(c.Status().Patch(ctx, ws, mergePatch(`{"status":{"phase":"Running"}}`))).To(charttest.RefusedTo(user), "patch its status")
	g.Expect(c.Delete(ctx, ws)).To(Succeed(), "delete it")

	elsewhere := exampleObject(t, "quickstart/workspacedeployment.yaml", other)
	g.Expect(c.Create(ctx, elsewhere)).To(charttest.RefusedTo(user), "create a workspace in another namespace")
	g.Expect(env.Client.Create(ctx, elsewhere)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), elsewhere) })
	g.Expect(c.Delete(ctx, elsewhere)).To(charttest.RefusedTo(user), "delete a workspace in another namespace")

	for what, obj := range map[string]client.Object{
		"a ServiceSet":        &k0rdentv1beta1.ServiceSet{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: own}},
		"a ClusterDeployment": &k0rdentv1beta1.ClusterDeployment{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: own}},
		"a Colony":            exampleObject(t, "quickstart/colony.yaml", own),
		"a TenantQuota":       quotaExample(t),
	} {
		g.Expect(c.Create(ctx, obj)).To(charttest.RefusedTo(user), "create %s", what)
	}

	nsPatch := mergePatch(`{"metadata":{"labels":{"apiary.dev/tenant":"someone-else"}}}`)
	g.Expect(c.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: own}}, nsPatch)).To(charttest.RefusedTo(user),
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

// beForbidden matches a refused request.
func beForbidden() types.GomegaMatcher { return Satisfy(apierrors.IsForbidden) }

// impersonate returns a client that acts as user, an authenticated user of no group.
func impersonate(t *testing.T, user string) charttest.Tenant {
	t.Helper()
	return charttest.Impersonate(t, env.Config, env.Scheme, user)
}
