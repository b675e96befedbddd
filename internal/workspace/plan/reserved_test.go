package plan

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/workspace/request"
	"github.com/apiaryhq/apiary/internal/workspace/values"
)

// The value every case hides under _exalsius: no message may quote it.
const hidden = "TOP-SECRET-9"

func TestResolveValuesRefusesReservedValues(t *testing.T) {
	cases := []struct {
		name, classValues, values string
		from                      []workspacesv1.ValuesReference
		content                   string
		wantField, wantMsg        string
	}{
		{name: "inline values", values: `{"a":1,"_exalsius":{"resources":{"perReplica":{"gpuCount":"` + hidden + `"}}}}`,
			wantField: "spec.values", wantMsg: "the inline values set _exalsius.resources.perReplica.gpuCount: keys under _exalsius are reserved"},
		{name: "inline null", values: `{"_exalsius":null}`, wantField: "spec.values", wantMsg: "the inline values set _exalsius:"},
		{name: "a Secret document", from: []workspacesv1.ValuesReference{{Kind: "Secret", Name: "s"}},
			content:   "_exalsius:\n  scheduling:\n    nodeSelector:\n      gpu: " + hidden + "\n",
			wantField: "spec.valuesFrom[0]", wantMsg: `Secret s (key "values.yaml") set _exalsius.scheduling.nodeSelector.gpu`},
		{name: "a ConfigMap targetPath", from: []workspacesv1.ValuesReference{{Kind: "ConfigMap", Name: "cm", ValuesKey: "v",
			TargetPath: "_exalsius.resources.perReplica.gpuCount"}}, content: hidden,
			wantField: "spec.valuesFrom[0]", wantMsg: `ConfigMap cm (key "v") set _exalsius.resources.perReplica.gpuCount`},
		{name: "a key smuggled into a targetPath's content", from: []workspacesv1.ValuesReference{{Kind: "Secret", Name: "s", TargetPath: "image.tag"}},
			content: "v1,_exalsius.resources.perReplica.gpuCount=" + hidden, wantField: "spec.valuesFrom[0]", wantMsg: "set _exalsius.resources.perReplica.gpuCount"},
		{name: "the class's defaultValues", classValues: `{"_exalsius":{"x":"` + hidden + `"}}`,
			wantField: "spec.defaultValues of the class", wantMsg: "WorkspaceClass c set _exalsius.x"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			class := &workspacesv1.WorkspaceClass{}
			class.Name = "c"
			if tc.classValues != "" {
				class.Spec.DefaultValues = &apiextensionsv1.JSON{Raw: []byte(tc.classValues)}
			}
			obj := &workspacesv1.WorkspaceDeployment{}
			if tc.values != "" {
				obj.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(tc.values)}
			}
			obj.Spec.ValuesFrom = tc.from
			fetch := func(workspacesv1.ValuesReference) ([]byte, bool, error) { return []byte(tc.content), true, nil }
			resolved := Resources(class, obj)
			_, err := ResolveValues(class, obj, resolved, Placement(resolved), fetch)
			var fe *FieldError
			g.Expect(errors.As(err, &fe)).To(BeTrue(), "got %v", err)
			g.Expect(fe.Reason).To(Equal(workspacesv1.ReservedValuesReason))
			g.Expect(fe.Field).To(Equal(tc.wantField))
			g.Expect(fe.Message).To(ContainSubstring(tc.wantMsg))
			g.Expect(fe.Error()).NotTo(ContainSubstring(hidden), "the message quotes the value")
		})
	}
}

func TestResolveValuesRemovesUnchargedAmounts(t *testing.T) {
	g := NewWithT(t)
	// A class without a GPU default that injects gpuCount into its chart.
	class := &workspacesv1.WorkspaceClass{Spec: workspacesv1.WorkspaceClassSpec{
		ResourceInjection: &workspacesv1.ResourceInjectionMap{GPUCount: []workspacesv1.InjectionPath{`app.resources.limits["nvidia.com/gpu"]`}},
	}}
	obj := &workspacesv1.WorkspaceDeployment{}
	obj.Spec.Values = &apiextensionsv1.JSON{Raw: []byte(`{"app":{"resources":{"limits":{"nvidia.com/gpu":8}}}}`)}
	resolved := Resources(class, obj)
	g.Expect(request.Of(resolved).Total.GPUs).To(BeZero())
	v, err := ResolveValues(class, obj, resolved, Placement(resolved), nil)
	g.Expect(err).NotTo(HaveOccurred())
	_, found := values.LookupPath(v.Public, []string{"app", "resources", "limits", "nvidia.com/gpu"})
	g.Expect(found).To(BeFalse(), "the chart would request GPUs that nobody charged")
	g.Expect(v.Overwritten).To(ConsistOf(values.Overwrite{Path: `app.resources.limits["nvidia.com/gpu"]`, Field: "gpuCount", Removed: true}))
}

func TestCheckClassValues(t *testing.T) {
	g := NewWithT(t)
	class := &workspacesv1.WorkspaceClass{Spec: workspacesv1.WorkspaceClassSpec{
		DefaultValues: &apiextensionsv1.JSON{Raw: []byte(`{"image":"v1"}`)},
		UserFacingConfig: []workspacesv1.UserFacingConfigField{
			{HelmValuePath: "auth.password"}, {HelmValuePath: "a..b"},
		},
	}}
	g.Expect(CheckClassValues(class)).To(BeEmpty())

	class.Spec.DefaultValues = &apiextensionsv1.JSON{Raw: []byte(`{"_exalsius":{"scheduling":{"nodeSelector":{"a":"` + hidden + `"}}}}`)}
	class.Spec.UserFacingConfig = append(class.Spec.UserFacingConfig, workspacesv1.UserFacingConfigField{HelmValuePath: `_exalsius.resources["x"]`})
	problems := CheckClassValues(class)
	g.Expect(problems).To(HaveLen(2))
	g.Expect(problems[0].Field).To(Equal("spec.defaultValues"))
	g.Expect(problems[0].Reason).To(Equal(workspacesv1.ReservedValuesReason))
	g.Expect(problems[0].Error()).To(ContainSubstring("set _exalsius.scheduling.nodeSelector.a"))
	g.Expect(problems[0].Error()).NotTo(ContainSubstring(hidden))
	g.Expect(problems[1].Field).To(Equal("spec.userFacingConfig[2].helmValuePath"))
	g.Expect(problems[1].Error()).To(ContainSubstring(`"_exalsius.resources[\"x\"]" lies under _exalsius`))
}
