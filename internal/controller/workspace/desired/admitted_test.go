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
	class, resolved, cases := admittedCases()
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

// TestTheAdmittedMemoAnswersAsTheCheck: once any admitted set of objects is
// remembered, every other set — each case above, and each with other
// resolved resources or other injection paths — is answered as a fresh
// check answers it: the memo's key covers everything the check reads.
func TestTheAdmittedMemoAnswersAsTheCheck(t *testing.T) {
	g := NewWithT(t)
	class, resolved, cases := admittedCases()
	otherCPU := resource.MustParse("2")
	otherResolved := workspacesv1.WorkspaceResourceSpec{PerReplica: &workspacesv1.PerReplicaResources{CPU: &otherCPU}}
	otherClass := class.DeepCopy()
	otherClass.Spec.ResourceInjection.CPU = []workspacesv1.InjectionPath{"app.other"}
	type input struct {
		name     string
		class    *workspacesv1.WorkspaceClass
		resolved workspacesv1.WorkspaceResourceSpec
		objs     []*unstructured.Unstructured
	}
	var inputs []input
	for _, tc := range cases {
		inputs = append(inputs, input{tc.name, class, resolved, tc.objs},
			input{tc.name + ", other resources", class, otherResolved, tc.objs},
			input{tc.name + ", other paths", otherClass, resolved, tc.objs})
	}
	remembered := 0
	for _, first := range inputs {
		admittedChecks.Clear()
		if CheckAdmitted(first.objs, first.class, first.resolved) != nil {
			continue
		}
		remembered++
		for _, next := range inputs {
			want := checkAdmitted(next.objs, next.class, next.resolved)
			got := CheckAdmitted(next.objs, next.class, next.resolved)
			g.Expect(got == nil).To(Equal(want == nil), "after %q was admitted, %q: the memo answered %v, the check %v", first.name, next.name, got, want)
		}
	}
	g.Expect(remembered).To(BeNumerically(">=", 2))
}

type admittedCase struct {
	name string
	objs []*unstructured.Unstructured
	want string // "" when admitted
}

// admittedCases are a class, its resolved resources and sets of objects,
// each with what CheckAdmitted answers.
func admittedCases() (*workspacesv1.WorkspaceClass, workspacesv1.WorkspaceResourceSpec, []admittedCase) {
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
	cases := []admittedCase{
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
	return class, resolved, cases
}
