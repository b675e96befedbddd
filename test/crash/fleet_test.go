package crash_test

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
	"github.com/apiaryhq/apiary/test/standin"
)

// Shapes of a fleet.
const (
	colonyName = "fleet"
	// gpuNodes GPU nodes of gpusPerNode GPUs each are on the child; every
	// cluster sees them and admits on them on its own.
	gpuNodes    = 2
	gpusPerNode = 4
	// prereqTemplate is the shared prerequisite of the prerequisite classes.
	prereqTemplate = "certs-1-0"
)

// fleet is what a test rolls out in its namespace: a Colony whose first
// clusters carry the workspaces, a class without prerequisites, one class
// per cluster with a shared prerequisite (each cluster installs it into a
// child namespace of its own: all clusters reach one child control plane),
// and GPU nodes of a model of the fleet's own.
type fleet struct {
	t      testing.TB
	c      client.Client
	ns     string
	prefix string
	model  string
	colony []string // cluster names of the Colony, in order
	// clusters are the ClusterDeployments that carry workspaces.
	clusters   []string
	workspaces []*workspace
	capacity   map[string]int64
	// maxGPUs bounds what a GPU workspace asks for (gpusPerNode unless set).
	maxGPUs int
}

// workspace is one workspace of a fleet and what the test did to it.
type workspace struct {
	name, cluster, class string
	gpus                 int32
	prereq               bool
	updated, deleted     bool
}

// newFleet creates the namespace, k0rdent's fixtures, the classes and the
// GPU nodes; the Colony and the workspaces come with createColony and
// createWorkspaces.
func newFleet(t testing.TB, prefix string, colony, clusters int) *fleet {
	t.Helper()
	return newFleetWhere(t, prefix, colony, clusters, nil)
}

// newFleetWhere is newFleet in a namespace accept (when set) accepts.
func newFleetWhere(t testing.TB, prefix string, colony, clusters int, accept func(ns string) bool) *fleet {
	t.Helper()
	ctx := context.Background()
	name := prefix + rand.String(4)
	for accept != nil && !accept(name) {
		name = prefix + rand.String(4)
	}
	f := &fleet{t: t, c: env.Client, prefix: name, capacity: map[string]int64{}}
	f.ns = f.prefix
	f.model = "crash-" + f.prefix
	if err := f.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}}); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{
		standin.NewClusterTemplate(f.ns, "tpl", true),
		standin.NewCredential(f.ns, "cred", true),
		standin.NewServiceTemplate(f.ns, "tmpl", true, nil),
		standin.NewHelmServiceTemplate(f.ns, prereqTemplate, "certs", "1.0.0",
			map[string]string{standin.AnnotationChart: standin.ChartPrerequisite}),
	} {
		if err := standin.CreateWithStatus(ctx, f.c, obj); err != nil {
			t.Fatal(err)
		}
	}
	for i := range colony {
		f.colony = append(f.colony, fmt.Sprintf("c%02d", i))
	}
	for i := range clusters {
		f.clusters = append(f.clusters, f.cd(f.colony[i]))
	}
	f.createClass(f.plainClass(), nil)
	for _, cd := range f.clusters {
		f.createClass(f.prereqClass(cd), []workspacesv1.PrerequisiteSpec{{
			ServiceTemplate: workspacesv1.ServiceTemplateRef{Name: prereqTemplate, Namespace: f.ns},
			Namespace:       "pre-" + cd + "-" + f.prefix,
		}})
	}
	t.Cleanup(f.purgeIfFailed)
	for i := range gpuNodes {
		name := fmt.Sprintf("%s-gpu-%d", f.prefix, i)
		if err := standin.AddGPUNode(ctx, child.Client, name, map[string]string{"exalsius.ai/gpu-model": f.model}, "nvidia.com/gpu", gpusPerNode); err != nil {
			t.Fatal(err)
		}
		f.capacity[name] = gpusPerNode
		t.Cleanup(func() {
			_ = child.Client.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
		})
	}
	return f
}

// cd is the ClusterDeployment of a Colony cluster.
func (f *fleet) cd(cluster string) string { return colonyName + "-" + cluster }

func (f *fleet) plainClass() string { return f.prefix + "-plain" }
func (f *fleet) prereqClass(cd string) string {
	return f.prefix + "-pre-" + strings.TrimPrefix(cd, colonyName+"-")
}

func (f *fleet) createClass(name string, prereqs []workspacesv1.PrerequisiteSpec) {
	f.t.Helper()
	c := &workspacesv1.WorkspaceClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: workspacesv1.WorkspaceClassSpec{
		DisplayName:     name,
		ServiceTemplate: workspacesv1.ServiceTemplateRef{Name: "tmpl", Namespace: f.ns},
		Prerequisites:   prereqs,
	}}
	if err := f.c.Create(context.Background(), c); err != nil {
		f.t.Fatalf("creating WorkspaceClass %s: %v", name, err)
	}
	f.t.Cleanup(func() { _ = env.Client.Delete(context.Background(), c) })
}

// colonyObject is the Colony with the given clusters, each of config
// controlPlaneNumber.
func (f *fleet) colonyObject(clusters []string, controlPlanes map[string]int) *infrav1.Colony {
	c := &infrav1.Colony{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: colonyName}}
	for _, cl := range clusters {
		n := max(controlPlanes[cl], 1)
		c.Spec.ColonyClusters = append(c.Spec.ColonyClusters, infrav1.ColonyCluster{
			ClusterName: cl,
			ClusterDeploymentSpec: &runtime.RawExtension{Raw: fmt.Appendf(nil,
				`{"template":"tpl","credential":"cred","config":{"controlPlaneNumber":%d}}`, n)},
		})
	}
	return c
}

// createColony creates the Colony of every cluster.
func (f *fleet) createColony() {
	f.t.Helper()
	if err := f.c.Create(context.Background(), f.colonyObject(f.colony, nil)); err != nil {
		f.t.Fatalf("creating the Colony: %v", err)
	}
}

// setColony changes the Colony's clusters in place.
func (f *fleet) setColony(clusters []string, controlPlanes map[string]int) error {
	ctx := context.Background()
	cur := &infrav1.Colony{}
	if err := f.c.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: colonyName}, cur); err != nil {
		return err
	}
	cur.Spec = f.colonyObject(clusters, controlPlanes).Spec
	return f.c.Update(ctx, cur)
}

// planWorkspaces spreads n workspaces over the clusters: every second asks
// for 1 to 4 GPUs of the fleet's model, every third of the others uses the
// cluster's prerequisite class.
func (f *fleet) planWorkspaces(n int, r *rng) {
	for i := range n {
		w := &workspace{name: fmt.Sprintf("%s-%03d", f.prefix, i), cluster: f.clusters[i%len(f.clusters)], class: f.plainClass()}
		switch {
		case i%2 == 0:
			w.gpus = int32(1 + r.intN(cmp.Or(f.maxGPUs, gpusPerNode)))
		case i%3 == 1:
			w.prereq, w.class = true, f.prereqClass(w.cluster)
		}
		f.workspaces = append(f.workspaces, w)
	}
}

// object is the workspace as created, with values v1.
func (f *fleet) object(w *workspace) *workspacesv1.WorkspaceDeployment {
	obj := &workspacesv1.WorkspaceDeployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: w.name},
		Spec: workspacesv1.WorkspaceDeploymentSpec{
			WorkspaceClassRef:    w.class,
			ClusterDeploymentRef: workspacesv1.ClusterDeploymentReference{Name: w.cluster},
			Values:               &apiextensionsv1.JSON{Raw: []byte(`{"crash":"v1"}`)},
		},
	}
	if w.gpus > 0 {
		obj.Spec.Resources = &workspacesv1.WorkspaceResourceSpec{PerReplica: &workspacesv1.PerReplicaResources{
			GPUCount: ptr.To(w.gpus), GPUType: ptr.To(f.model)}}
	}
	return obj
}

// create creates a workspace.
func (f *fleet) create(w *workspace) error {
	if err := f.c.Create(context.Background(), f.object(w)); err != nil {
		return fmt.Errorf("creating workspace %s: %w", w.name, err)
	}
	return nil
}

// update changes a workspace's values in place (v2), which its release
// must show.
func (f *fleet) update(w *workspace) error {
	ctx := context.Background()
	cur := &workspacesv1.WorkspaceDeployment{}
	if err := f.c.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: w.name}, cur); err != nil {
		return err
	}
	cur.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"crash":"v2"}`)}
	if err := f.c.Update(ctx, cur); err != nil {
		return fmt.Errorf("updating workspace %s: %w", w.name, err)
	}
	w.updated = true
	return nil
}

// remove deletes a workspace.
func (f *fleet) remove(w *workspace) error {
	err := f.c.Delete(context.Background(), &workspacesv1.WorkspaceDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: f.ns, Name: w.name}})
	if client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting workspace %s: %w", w.name, err)
	}
	w.deleted = true
	return nil
}

// live are the workspaces not deleted.
func (f *fleet) live() []*workspace {
	var out []*workspace
	for _, w := range f.workspaces {
		if !w.deleted {
			out = append(out, w)
		}
	}
	return out
}

// release is a workspace's Helm release and its namespace on the child.
func release(w *workspace) (name, namespace string) {
	return plan.ReleaseName(w.cluster, w.name), plan.ChildNamespace(w.name)
}

func serviceSetName(w *workspace) string { return plan.ServiceSetName(w.cluster, w.name) }

// purgeIfFailed removes, after a failed test, what the test left in its
// namespace, finalizers and all, so that the managers of the next tests
// find nothing of it (a Git-mode manager would commit it).
func (f *fleet) purgeIfFailed() {
	if !f.t.Failed() {
		return
	}
	ctx := context.Background()
	for _, list := range []client.ObjectList{
		&workspacesv1.WorkspaceDeploymentList{}, &infrav1.ColonyList{},
		&k0rdentv1beta1.ServiceSetList{}, &k0rdentv1beta1.ClusterDeploymentList{},
	} {
		if err := f.c.List(ctx, list, client.InNamespace(f.ns)); err != nil {
			continue
		}
		items, _ := meta.ExtractList(list)
		for _, it := range items {
			o := it.(client.Object)
			_ = f.c.Delete(ctx, o)
			_ = f.c.Patch(ctx, o, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
		}
	}
}
