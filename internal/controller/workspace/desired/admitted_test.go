package desired

import (
	"encoding/base64"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/workspace/values"
)

// CheckAdmitted reads what a chart receives from the objects about to be
// delivered — the service's values and every valuesFrom object — and
// refuses them when any of them gives the chart, at an injection path,
// something other than what was admitted, or cannot be read.
func TestCheckAdmitted(t *testing.T) {
	gpu := `app.resources.limits["nvidia.com/gpu"]`
	class := &workspacesv1.WorkspaceClass{}
	class.Spec.ResourceInjection = &workspacesv1.ResourceInjectionMap{
		GPUCount: []workspacesv1.InjectionPath{workspacesv1.InjectionPath(gpu)},
		CPU:      []workspacesv1.InjectionPath{"app.cpu"},
	}
	cpu := resource.MustParse("500m")
	resolved := workspacesv1.WorkspaceResourceSpec{PerReplica: &workspacesv1.PerReplicaResources{CPU: &cpu}}
	// What Apiary renders: the CPU injected, no GPU.
	inline := `{"_exalsius":{"resources":{"perReplica":{"cpu":"500m"}}},"app":{"cpu":"500m","image":"x"}}`
	serviceSet := func(values string, from ...string) *unstructured.Unstructured {
		refs := []any{}
		for _, name := range from {
			refs = append(refs, map[string]any{"kind": "Secret", "name": name})
		}
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "k0rdent.mirantis.com/v1beta1", "kind": "ServiceSet",
			"metadata": map[string]any{"name": "wsd-c-w", "namespace": "team"},
			"spec":     map[string]any{"services": []any{map[string]any{"name": "wsd-c-w", "values": values, "valuesFrom": refs}}}}}
	}
	secret := func(name, field, doc string) *unstructured.Unstructured {
		if field == "data" {
			doc = base64.StdEncoding.EncodeToString([]byte(doc))
		}
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret",
			"metadata": map[string]any{"name": name, "namespace": "team"}, field: map[string]any{"values.yaml": doc}}}
	}
	cases := []struct {
		name string
		objs []*unstructured.Unstructured
		want string // "" when admitted
	}{
		{name: "what Apiary renders", objs: []*unstructured.Unstructured{serviceSet(inline, "v"), secret("v", "data", "password: s3cr3t\n")}},
		{name: "a secret document that agrees", objs: []*unstructured.Unstructured{serviceSet(inline, "v"), secret("v", "data", "app:\n  cpu: 500m\n  token: s3cr3t\n")}},
		{name: "a secret document with 8 GPUs", objs: []*unstructured.Unstructured{serviceSet(inline, "v"), secret("v", "data", "app:\n  cpu: 500m\n  resources:\n    limits:\n      nvidia.com/gpu: 8\n")},
			want: `Secret team/v (key values.yaml) sets ` + gpu + ` (gpuCount)`},
		{name: "a second key of the Secret", objs: []*unstructured.Unstructured{serviceSet(inline, "v"), func() *unstructured.Unstructured {
			s := secret("v", "data", "a: 1\n")
			s.Object["data"].(map[string]any)["more.yaml"] = base64.StdEncoding.EncodeToString([]byte("app: {cpu: 64}"))
			return s
		}()}, want: "Secret team/v (key more.yaml) sets app.cpu (cpu)"},
		{name: "stringData", objs: []*unstructured.Unstructured{serviceSet(inline, "v"), secret("v", "stringData", `{"_exalsius":{"resources":{"perReplica":{"gpuCount":8}}}}`)},
			want: "Secret team/v (key values.yaml) sets _exalsius.resources.perReplica."},
		{name: "a top-level key that drops the injected value", objs: []*unstructured.Unstructured{serviceSet(inline, "v"), secret("v", "data", "app:\n  token: s3cr3t\n")},
			want: "Secret team/v (key values.yaml) sets app.cpu (cpu)"},
		{name: "values without the injected value", objs: []*unstructured.Unstructured{serviceSet(`{"app":{}}`)},
			want: "do not hold the admitted value at _exalsius.resources.perReplica.cpu"},
		{name: "a valuesFrom object not delivered", objs: []*unstructured.Unstructured{serviceSet(inline, "elsewhere")},
			want: "valuesFrom Secret team/elsewhere is not delivered with the workspace"},
		{name: "a document that is not YAML", objs: []*unstructured.Unstructured{serviceSet(inline, "v"), secret("v", "data", "a: [\n")},
			want: "key values.yaml"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			err := CheckAdmitted(tc.objs, class, resolved)
			if tc.want == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(errors.Is(err, values.ErrNotAdmitted)).To(BeTrue(), "got %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tc.want))
			g.Expect(err.Error()).NotTo(ContainSubstring("s3cr3t"))
		})
	}
}
