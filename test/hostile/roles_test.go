package hostile_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apitypes "k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/test/charttest"
)

// TestTenantRolesAllowAndRefuse: the chart's tenant ClusterRoles, rendered
// as `helm template` does and aggregated into the built-in edit role, are
// bound to the user mallory in one namespace, with the WorkspaceClass
// reader bound cluster-wide. Acting as mallory, real requests show what a
// tenant may do (write its WorkspaceDeployments, read WorkspaceClasses) and
// what it may not: the status the manager writes, ServiceSets,
// ClusterDeployments, TenantQuotas, its namespace's labels, and another
// namespace's workspaces.
func TestTenantRolesAllowAndRefuse(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	roles := charttest.InstallTenantRoles(t, env.Client, "hostile")
	charttest.AggregateBuiltins(t, env.Client)
	own, other := env.NewNamespace(t, "roles-own"), env.NewNamespace(t, "roles-other")
	charttest.BindInNamespace(t, env.Client, own, "edit", "mallory")
	charttest.BindClusterWide(t, env.Client, roles[charttest.ClassReader].Name, "mallory")
	mallory := charttest.Impersonate(t, env.Config, env.Scheme, "mallory")
	refused := charttest.RefusedTo(mallory.User)
	mergePatch := func(s string) client.Patch { return client.RawPatch(apitypes.MergePatchType, []byte(s)) }
	cls := class(t, own, nil)

	// Allowed: its workspaces, written and read, and the classes.
	ws := workspace(own, "mine", cls, "c1")
	g.Eventually(func() error { return mallory.Create(ctx, ws) }).WithTimeout(30*time.Second).Should(Succeed(),
		"create a workspace in its namespace")
	t.Cleanup(func() { _ = client.IgnoreNotFound(env.Client.Delete(context.Background(), ws)) })
	g.Expect(mallory.Patch(ctx, ws, mergePatch(`{"metadata":{"labels":{"team":"a"}}}`))).To(Succeed(), "patch it")
	g.Expect(mallory.List(ctx, &workspacesv1.WorkspaceDeploymentList{}, client.InNamespace(own))).To(Succeed(), "list its workspaces")
	g.Expect(mallory.Get(ctx, client.ObjectKey{Name: cls}, &workspacesv1.WorkspaceClass{})).To(Succeed(), "read a class")
	g.Expect(mallory.List(ctx, &workspacesv1.WorkspaceClassList{})).To(Succeed(), "list the classes")

	// Refused: what the manager and the administrators write.
	g.Expect(mallory.Status().Patch(ctx, ws, mergePatch(`{"status":{"phase":"Running"}}`))).To(refused, "patch its workspace's status")
	c := &workspacesv1.WorkspaceClass{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: cls}, c)).To(Succeed())
	g.Expect(mallory.Patch(ctx, c, mergePatch(`{"spec":{"displayName":"mine"}}`))).To(refused, "change a class")
	g.Expect(mallory.Create(ctx, workspace(other, "theirs", cls, "c1"))).To(refused, "create a workspace in another namespace")
	g.Expect(mallory.List(ctx, &workspacesv1.WorkspaceDeploymentList{}, client.InNamespace(other))).To(refused,
		"list another namespace's workspaces")
	for what, obj := range map[string]client.Object{
		"a ServiceSet":        &k0rdentv1beta1.ServiceSet{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: own}},
		"a ClusterDeployment": &k0rdentv1beta1.ClusterDeployment{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: own}},
		"a TenantQuota":       &quotav1alpha1.TenantQuota{ObjectMeta: metav1.ObjectMeta{Name: "mine-" + own}},
	} {
		g.Expect(mallory.Create(ctx, obj)).To(refused, "create %s", what)
	}
	g.Expect(mallory.List(ctx, &quotav1alpha1.TenantQuotaList{})).To(refused, "list the quotas")
	g.Expect(mallory.Patch(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: own}},
		mergePatch(`{"metadata":{"labels":{"apiary.dev/tenant":"someone-else"}}}`))).To(refused, "relabel its namespace")
	g.Expect(mallory.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}})).To(refused, "delete a namespace")

	g.Expect(mallory.Delete(ctx, ws)).To(Succeed(), "delete its workspace")
}
