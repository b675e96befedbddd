package kcmmatrix

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/naming"
	"github.com/apiaryhq/apiary/internal/render"
	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
)

// fieldManager is the field manager of the checks' applies.
const fieldManager = "apiary-kcmmatrix"

// written is what Apiary writes of k0rdent kinds for the shipped examples.
type written struct {
	// cluster is the quick start Colony's first ClusterDeployment.
	cluster *unstructured.Unstructured
	// workspace is the quick start workspace's ServiceSet, and release the
	// name of its release.
	workspace *unstructured.Unstructured
	release   string
	// prerequisite is the shared ServiceSet of the GPU class's first
	// prerequisite, and prereqRelease the name of its release.
	prerequisite  *unstructured.Unstructured
	prereqRelease string
	// all is every object the bundles rendered, in apply order.
	all []*unstructured.Unstructured
}

// readExample decodes an example manifest strictly.
func readExample(t *testing.T, path string, obj any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "examples", path))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, obj); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// renderWith renders a request with the named built-in bundle, as the
// controllers do.
func renderWith(t *testing.T, bundle string, req render.Request) []*unstructured.Unstructured {
	t.Helper()
	reg, err := render.NewRegistry("")
	if err != nil {
		t.Fatal(err)
	}
	b, err := reg.Get(bundle)
	if err != nil {
		t.Fatal(err)
	}
	out, err := b.Render(req)
	if err != nil {
		t.Fatalf("rendering %s: %v", bundle, err)
	}
	return out.Objects
}

// apiaryWrites renders, with the real bundles, the objects Apiary writes for
// the quick start (a Colony's ClusterDeployment, a workspace's ServiceSet
// and its values Secret) and for the GPU example's prerequisite (a shared
// ServiceSet), all in namespace ns.
func apiaryWrites(t *testing.T, ns string) written {
	t.Helper()
	var w written
	operator := map[string]any{"deliveryMode": "direct"}

	colony := &infrav1.Colony{}
	readExample(t, "quickstart/colony.yaml", colony)
	colony.Namespace, colony.UID = ns, "0d6c3e1c-0000-4000-8000-0000000000c1"
	entry := &colony.Spec.ColonyClusters[0]
	cdName := naming.ClusterDeploymentName(colony.Name, entry.ClusterName)
	req, err := render.ColonyClusterRequest(colony, entry, cdName, operator)
	if err != nil {
		t.Fatal(err)
	}
	objs := renderWith(t, render.ColonyClusterBundle, req)
	w.cluster, w.all = find(t, objs, k0rdentv1beta1.ClusterDeploymentKind), append(w.all, objs...)

	class := &workspacesv1.WorkspaceClass{}
	readExample(t, "quickstart/workspaceclass.yaml", class)
	wsd := &workspacesv1.WorkspaceDeployment{}
	readExample(t, "quickstart/workspacedeployment.yaml", wsd)
	wsd.Namespace, wsd.UID = ns, "0d6c3e1c-0000-4000-8000-0000000000c2"
	password := &corev1.Secret{}
	readExample(t, "quickstart/notebook-password.yaml", password)
	resolved := plan.Resources(class, wsd)
	vals, err := plan.ResolveValues(class, wsd, resolved, plan.Placement(resolved),
		func(ref workspacesv1.ValuesReference) ([]byte, bool, error) {
			// The quick start's Secret, as the API server would store it.
			v, ok := password.StringData[ref.ValuesKey]
			return []byte(v), ok && ref.Kind == "Secret" && ref.Name == password.Name, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	req, err = plan.ServiceSetRequest(class, wsd, cdName, ns, vals, operator)
	if err != nil {
		t.Fatal(err)
	}
	objs = renderWith(t, render.WorkspaceServiceSetBundle, req)
	w.workspace, w.all = find(t, objs, k0rdentv1beta1.ServiceSetKind), append(w.all, objs...)
	w.release = plan.ReleaseName(cdName, wsd.Name)

	gpuClass := &workspacesv1.WorkspaceClass{}
	readExample(t, "gpu/workspaceclass-vllm.yaml", gpuClass)
	p := gpuClass.Spec.Prerequisites[0]
	target := plan.NewPrerequisiteTarget(cdName, p.ServiceTemplate.Name, p.Namespace)
	req, err = plan.PrerequisiteRequest(gpuClass, p, cdName, ns, target, operator)
	if err != nil {
		t.Fatal(err)
	}
	objs = renderWith(t, plan.PrerequisiteBundle, req)
	w.prerequisite, w.all = find(t, objs, k0rdentv1beta1.ServiceSetKind), append(w.all, objs...)
	w.prereqRelease = target.Release
	return w
}

// find returns the one rendered object of a k0rdent kind.
func find(t *testing.T, objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	var found *unstructured.Unstructured
	for _, o := range objs {
		if o.GetAPIVersion() == k0rdentv1beta1.GroupVersion.String() && o.GetKind() == kind {
			if found != nil {
				t.Fatalf("two %s rendered", kind)
			}
			found = o
		}
	}
	if found == nil {
		t.Fatalf("no %s rendered", kind)
	}
	return found
}

// apply server-side applies an object with strict field validation, as
// Apiary's direct delivery applies (it forces ownership too).
func apply(ctx context.Context, c client.Client, obj *unstructured.Unstructured) error {
	//nolint:staticcheck // client.Client.Apply takes no field validation option.
	return c.Patch(ctx, obj, client.Apply, client.ForceOwnership, client.FieldOwner(fieldManager),
		client.FieldValidation("Strict"))
}

// checkWrites applies every object Apiary writes and checks that the
// server kept every field it was sent, and that what it holds decodes
// strictly into Apiary's types.
func checkWrites(t *testing.T, env *testenv.Environment, w written) {
	ctx := context.Background()
	for _, obj := range w.all {
		name := fmt.Sprintf("%s %s", obj.GetKind(), obj.GetName())
		t.Run(obj.GetKind()+" "+obj.GetName(), func(t *testing.T) {
			g := NewWithT(t)
			sent := obj.DeepCopy()
			g.Expect(apply(ctx, env.Client, obj.DeepCopy())).To(Succeed(), "%s refused", name)
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(obj.GroupVersionKind())
			g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: obj.GetNamespace(), Name: obj.GetName()}, got)).To(Succeed())
			if want, ok := sent.Object["spec"]; ok {
				g.Expect(missing(want, got.Object["spec"], "spec")).To(BeEmpty(), "%s: fields pruned or changed", name)
			}
			g.Expect(got.GetLabels()).To(Equal(sent.GetLabels()))
			if obj.GetAPIVersion() == k0rdentv1beta1.GroupVersion.String() {
				strictDecode(g, got, name)
			}
		})
	}
}

// strictDecode decodes what the server holds into Apiary's type of its
// kind, refusing any field the type lacks.
func strictDecode(g Gomega, u *unstructured.Unstructured, name string) {
	raw, err := json.Marshal(u.Object)
	g.Expect(err).NotTo(HaveOccurred())
	var typed any
	switch u.GetKind() {
	case k0rdentv1beta1.ClusterDeploymentKind:
		typed = &k0rdentv1beta1.ClusterDeployment{}
	case k0rdentv1beta1.ServiceSetKind:
		typed = &k0rdentv1beta1.ServiceSet{}
	default:
		g.Expect(u.GetKind()).To(BeEmpty(), "no Go type for this kind")
	}
	g.Expect(yaml.UnmarshalStrict(raw, typed)).To(Succeed(), "%s: the server holds fields Apiary's types lack", name)
}

// missing lists the paths of want that got lacks or holds otherwise; got
// may hold more (server defaults).
func missing(want, got any, path string) []string {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{path}
		}
		var out []string
		for k, v := range w {
			out = append(out, missing(v, g[k], path+"."+k)...)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return []string{path}
		}
		var out []string
		for i := range w {
			out = append(out, missing(w[i], g[i], fmt.Sprintf("%s[%d]", path, i))...)
		}
		return out
	default:
		if !reflect.DeepEqual(normalize(want), normalize(got)) {
			return []string{fmt.Sprintf("%s: sent %v, got %v", path, want, got)}
		}
		return nil
	}
}

// normalize makes numbers comparable across JSON decoders.
func normalize(v any) any {
	switch n := v.(type) {
	case int64:
		return float64(n)
	case int:
		return float64(n)
	case int32:
		return float64(n)
	}
	return v
}
