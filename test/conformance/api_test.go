package conformance

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/testenv"
)

// readFixture reads one object of testdata/exalsius, with NAMESPACE replaced.
func readFixture(t *testing.T, name, namespace string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "exalsius", name))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := testenv.DecodeObjects([]byte(strings.ReplaceAll(string(data), "NAMESPACE", namespace)))
	if err != nil || len(objs) != 1 {
		t.Fatalf("decoding %s: %v", name, err)
	}
	return objs[0]
}

// TestExalsiusFieldsRoundTrip writes every field of the exalsius API through
// the API server (spec, then status through the status subresource) and reads
// it back: a field missing from Apiary's schema would be pruned.
func TestExalsiusFieldsRoundTrip(t *testing.T) {
	ns := env.NewNamespace(t, "roundtrip")
	for _, fixture := range []string{"colony.yaml", "workspaceclass.yaml", "workspacedeployment.yaml"} {
		t.Run(fixture, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			want := readFixture(t, fixture, ns)
			obj := want.DeepCopy()
			if obj.GetKind() != "WorkspaceClass" {
				obj.SetNamespace(ns)
			} else {
				obj.SetName(obj.GetName() + "-" + rand.String(4))
			}
			status := obj.Object["status"]
			delete(obj.Object, "status")
			g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
			t.Cleanup(func() { _ = env.Client.Delete(ctx, obj) })
			obj.Object["status"] = status
			g.Expect(env.Client.Status().Update(ctx, obj)).To(Succeed())

			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(obj.GroupVersionKind())
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), got)).To(Succeed())
			for _, part := range []string{"spec", "status"} {
				gotJSON, err := json.Marshal(got.Object[part])
				g.Expect(err).NotTo(HaveOccurred())
				wantJSON, err := json.Marshal(want.Object[part])
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(gotJSON).To(MatchJSON(wantJSON), "%s lost or changed a field", part)
			}
		})
	}
}

func TestWorkspaceClassSpecIsImmutable(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	class := readFixture(t, "workspaceclass.yaml", "")
	class.SetName("immutable-" + rand.String(5))
	delete(class.Object, "status")
	g.Expect(env.Client.Create(ctx, class)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(ctx, class) })

	changed := class.DeepCopy()
	g.Expect(unstructured.SetNestedField(changed.Object, "Renamed", "spec", "displayName")).To(Succeed())
	err := env.Client.Update(ctx, changed)
	g.Expect(err).To(MatchError(ContainSubstring("WorkspaceClass spec is immutable")))

	// Metadata stays editable: labels do not change the offering.
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(class), class)).To(Succeed())
	class.SetLabels(map[string]string{"catalog": "beta"})
	g.Expect(env.Client.Update(ctx, class)).To(Succeed())
}

func TestWorkspaceNameLimits(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "names")
	name60 := "w" + strings.Repeat("x", 58) + "1"
	g.Expect(name60).To(HaveLen(60))
	wsd := &workspacesv1.WorkspaceDeployment{}
	wsd.Name, wsd.Namespace = name60, ns
	wsd.Spec.WorkspaceClassRef = "jupyter-notebook-0-3-0"
	wsd.Spec.ClusterDeploymentRef.Name = "child"
	g.Expect(env.Client.Create(ctx, wsd)).To(Succeed(), "a 60-character name is the longest that fits ws-<name>")

	long := wsd.DeepCopy()
	long.ResourceVersion = ""
	long.Name = name60 + "y"
	g.Expect(env.Client.Create(ctx, long)).To(MatchError(ContainSubstring("at most 60 characters")))
}

// TestCRDShape checks what kubectl users see: scope, short names, printer
// columns and the status subresource of each kind.
func TestCRDShape(t *testing.T) {
	type column struct{ name, path string }
	cases := []struct {
		crd        string
		scope      apiextensionsv1.ResourceScope
		shortNames []string
		columns    []column
	}{
		{
			crd: "colonies.infra.exalsius.ai", scope: apiextensionsv1.NamespaceScoped,
			columns: []column{{"Phase", ".status.phase"}, {"Ready Clusters", ".status.readyClusters"}, {"Total Clusters", ".status.totalClusters"}},
		},
		{
			crd: "workspaceclasses.workspaces.exalsius.ai", scope: apiextensionsv1.ClusterScoped, shortNames: []string{"wsc"},
			columns: []column{{"Display Name", ".spec.displayName"}, {"Replicas", ".spec.defaultResources.replicas"},
				{"ServiceTemplate", ".spec.serviceTemplate.name"}, {"Valid", ".status.valid"}, {"ValidationError", ".status.validationError"}},
		},
		{
			crd: "workspacedeployments.workspaces.exalsius.ai", scope: apiextensionsv1.NamespaceScoped, shortNames: []string{"wsd"},
			columns: []column{{"Class", ".spec.workspaceClassRef"}, {"Cluster", ".spec.clusterDeploymentRef.name"}, {"Phase", ".status.phase"},
				{"Ready", `.status.conditions[?(@.type=="Ready")].status`}, {"URL", ".status.access[0].url"}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.crd, func(t *testing.T) {
			g := NewWithT(t)
			crd := &apiextensionsv1.CustomResourceDefinition{}
			g.Expect(env.Client.Get(context.Background(), types.NamespacedName{Name: tc.crd}, crd)).To(Succeed())
			g.Expect(crd.Spec.Scope).To(Equal(tc.scope))
			g.Expect(crd.Spec.Names.ShortNames).To(ConsistOf(tc.shortNames))
			g.Expect(crd.Spec.Versions).To(HaveLen(1))
			v := crd.Spec.Versions[0]
			g.Expect(v.Name).To(Equal("v1"))
			g.Expect(v.Subresources).NotTo(BeNil())
			g.Expect(v.Subresources.Status).NotTo(BeNil())
			got := map[string]string{}
			for _, c := range v.AdditionalPrinterColumns {
				got[c.Name] = c.JSONPath
			}
			for _, c := range tc.columns {
				g.Expect(got).To(HaveKeyWithValue(c.name, c.path))
			}
		})
	}
}
