// Package builder makes the objects Apiary's suites share: what k0rdent
// and an administrator provide (templates, a credential, a ready
// ClusterDeployment), WorkspaceClasses, workspaces and Colonies. It is
// test/world's companion; it uses the k0rdent stand-in's object
// constructors, which test/world itself may not import.
package builder

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/test/standin"
	"github.com/apiaryhq/apiary/test/world"
)

// Template, Credential and ClusterTemplate are the names Templates gives
// what it creates; Cluster is the ClusterDeployment Tenant makes ready.
const (
	Template        = "tmpl"
	Credential      = "cred"
	ClusterTemplate = "tpl"
	Cluster         = "c1"
)

// Templates creates in ns what k0rdent and an administrator provide: the
// ClusterTemplate "tpl", the Credential "cred" and the workspace
// ServiceTemplate "tmpl".
func Templates(t testing.TB, c client.Client, ns string) {
	t.Helper()
	for _, obj := range []client.Object{
		standin.NewClusterTemplate(ns, ClusterTemplate, true),
		standin.NewCredential(ns, Credential, true),
		standin.NewServiceTemplate(ns, Template, true, nil),
	} {
		if err := standin.CreateWithStatus(context.Background(), c, obj); err != nil {
			t.Fatalf("creating %T: %v", obj, err)
		}
	}
}

// ReadyCluster creates the Templates in ns and a ClusterDeployment of them,
// and waits until the stand-in reports it Ready.
func ReadyCluster(t testing.TB, c client.Client, ns, name string) {
	t.Helper()
	Templates(t, c, ns)
	CreateReady(t, c, standin.NewClusterDeployment(ns, name, ClusterTemplate, Credential))
}

// Tenant creates a namespace (deleted when the test ends) with the
// Templates and the ready ClusterDeployment "c1".
func Tenant(t testing.TB, env *testenv.Environment, prefix string) string {
	t.Helper()
	ns := env.NewNamespace(t, prefix)
	ReadyCluster(t, env.Client, ns, Cluster)
	return ns
}

// CreateReady creates a ClusterDeployment (of "tpl" and "cred", see
// Templates) and waits until the stand-in reports it Ready.
func CreateReady(t testing.TB, c client.Client, cd *k0rdentv1beta1.ClusterDeployment) {
	t.Helper()
	ctx := context.Background()
	if err := c.Create(ctx, cd); err != nil {
		t.Fatalf("creating ClusterDeployment: %v", err)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		got := &k0rdentv1beta1.ClusterDeployment{}
		err := c.Get(ctx, client.ObjectKeyFromObject(cd), got)
		if err == nil && apimeta.IsStatusConditionTrue(got.Status.Conditions, k0rdentv1beta1.ReadyCondition) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("ClusterDeployment %s/%s is not Ready within a minute (last error: %v)", cd.Namespace, cd.Name, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// NewClass is the WorkspaceClass "cls-<ns>" of ns's template "tmpl", not
// created yet; mutate, when given, changes it.
func NewClass(ns, displayName string, mutate ...func(*workspacesv1.WorkspaceClass)) *workspacesv1.WorkspaceClass {
	c := &workspacesv1.WorkspaceClass{ObjectMeta: metav1.ObjectMeta{Name: "cls-" + ns}, Spec: workspacesv1.WorkspaceClassSpec{
		DisplayName: displayName, ServiceTemplate: workspacesv1.ServiceTemplateRef{Name: Template, Namespace: ns}}}
	for _, f := range mutate {
		f(c)
	}
	return c
}

// Named names a class.
func Named(name string) func(*workspacesv1.WorkspaceClass) {
	return func(c *workspacesv1.WorkspaceClass) { c.Name = name }
}

// OfTemplate makes a class install the ServiceTemplate template (of the
// class's template namespace) instead of "tmpl".
func OfTemplate(template string) func(*workspacesv1.WorkspaceClass) {
	return func(c *workspacesv1.WorkspaceClass) { c.Spec.ServiceTemplate.Name = template }
}

// WithPrerequisite adds to a class the prerequisite ServiceTemplate
// template of ns (within constraint, "" for any version), installed into
// the child namespace named like ns.
func WithPrerequisite(ns, template, constraint string) func(*workspacesv1.WorkspaceClass) {
	return func(c *workspacesv1.WorkspaceClass) {
		c.Spec.Prerequisites = append(c.Spec.Prerequisites, workspacesv1.PrerequisiteSpec{
			ServiceTemplate: workspacesv1.ServiceTemplateRef{Name: template, Namespace: ns, VersionConstraint: constraint},
			Namespace:       ns,
		})
	}
}

// WithEndpoints adds access endpoints to a class.
func WithEndpoints(endpoints ...workspacesv1.AccessEndpoint) func(*workspacesv1.WorkspaceClass) {
	return func(c *workspacesv1.WorkspaceClass) {
		c.Spec.AccessEndpoints = append(c.Spec.AccessEndpoints, endpoints...)
	}
}

// Class creates a WorkspaceClass (NewClass), deleted when the test ends,
// and returns its name.
func Class(t testing.TB, c client.Client, ns, displayName string, mutate ...func(*workspacesv1.WorkspaceClass)) string {
	t.Helper()
	cls := NewClass(ns, displayName, mutate...)
	Create(t, c, cls)
	return cls.Name
}

// Workspace is a workspace of a class on a cluster of ns, not created yet.
func Workspace(ns, name, cls, cluster string) *workspacesv1.WorkspaceDeployment {
	return &workspacesv1.WorkspaceDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: workspacesv1.WorkspaceDeploymentSpec{WorkspaceClassRef: cls,
			ClusterDeploymentRef: workspacesv1.ClusterDeploymentReference{Name: cluster, Namespace: ns}},
	}
}

// Colony is a Colony of ns with one cluster per name, each of the
// templates "tpl" and "cred", not created yet.
func Colony(ns, name string, clusters ...string) *infrav1.Colony {
	col := &infrav1.Colony{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	for _, c := range clusters {
		col.Spec.ColonyClusters = append(col.Spec.ColonyClusters, infrav1.ColonyCluster{ClusterName: c,
			ClusterDeploymentSpec: &runtime.RawExtension{Raw: []byte(`{"template":"` + ClusterTemplate + `","credential":"` + Credential + `"}`)}})
	}
	return col
}

// LabelNamespace sets a namespace's labels.
func LabelNamespace(t testing.TB, c client.Client, ns string, labels map[string]string) {
	t.Helper()
	obj := &corev1.Namespace{}
	if err := c.Get(context.Background(), client.ObjectKey{Name: ns}, obj); err != nil {
		t.Fatal(err)
	}
	obj.Labels = labels
	if err := c.Update(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
}

// Create creates an object on the management cluster and deletes it when
// the test ends; a workspace is waited for until it is gone.
func Create(t testing.TB, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
	t.Cleanup(func() {
		if w, ok := obj.(*workspacesv1.WorkspaceDeployment); ok {
			world.DeleteAndWait(t, c, w)
			return
		}
		_ = client.IgnoreNotFound(c.Delete(context.Background(), obj))
	})
}
