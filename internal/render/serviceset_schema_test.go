package render

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
)

// serviceSetProblems lists why an object is not a valid ServiceSet: it must
// decode strictly (no unknown field) into the Go type, round-trip to the same
// spec, and pass the k0rdent CRD's schema (required fields, types, enums)
// with no field pruned.
func serviceSetProblems(t *testing.T, u *unstructured.Unstructured) []string {
	t.Helper()
	var problems []string
	typed := &k0rdentv1beta1.ServiceSet{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, typed, true); err != nil {
		problems = append(problems, "converter: "+err.Error())
	}
	raw, err := json.Marshal(u.Object)
	must(t, err)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&k0rdentv1beta1.ServiceSet{}); err != nil {
		problems = append(problems, "strict JSON: "+err.Error())
	}
	back, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&typed.Spec)
	must(t, err)
	if !equality.Semantic.DeepEqual(back, u.Object["spec"]) {
		problems = append(problems, "the spec changes through the Go type")
	}
	schema := serviceSetSchema(t)
	for _, p := range pruning.PruneWithOptions(u.DeepCopy().Object, schema.structural, true,
		structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}) {
		problems = append(problems, "pruned by the CRD: "+p)
	}
	for _, e := range crdvalidation.ValidateCustomResource(nil, u.Object, schema.validator) {
		problems = append(problems, "CRD schema: "+e.Error())
	}
	return problems
}

// The check above catches what it must: unknown fields, missing required
// fields and values of the wrong type.
func TestServiceSetProblemsCatchesInvalidObjects(t *testing.T) {
	g := NewWithT(t)
	out := renderBundle(t, g, WorkspaceServiceSetBundle, workspaceInput())
	for name, edit := range map[string]func(obj map[string]any){
		"unknown service field": func(obj map[string]any) { svc(obj)["createNamespace"] = true },
		"no template":           func(obj map[string]any) { delete(svc(obj), "template") },
		"bad valuesFrom kind":   func(obj map[string]any) { svc(obj)["valuesFrom"] = []any{map[string]any{"kind": "Pod", "name": "x"}} },
		"no provider":           func(obj map[string]any) { delete(obj["spec"].(map[string]any), "provider") },
	} {
		u := out.Objects[0].DeepCopy()
		edit(u.Object)
		g.Expect(serviceSetProblems(t, u)).NotTo(BeEmpty(), name)
	}
}

func svc(obj map[string]any) map[string]any {
	return obj["spec"].(map[string]any)["services"].([]any)[0].(map[string]any)
}

// serviceSetSchema loads the v1beta1 schema of the k0rdent ServiceSet CRD.
func serviceSetSchema(t *testing.T) crdSchema {
	t.Helper()
	data, err := os.ReadFile("../../test/crds/k0rdent/k0rdent.mirantis.com_servicesets.yaml")
	must(t, err)
	crd := &apiextensionsv1.CustomResourceDefinition{}
	must(t, yaml.UnmarshalStrict(data, crd))
	for _, v := range crd.Spec.Versions {
		if v.Name != "v1beta1" {
			continue
		}
		internal := &apiextensions.JSONSchemaProps{}
		must(t, apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, internal, nil))
		s, err := structuralschema.NewStructural(internal)
		must(t, err)
		validator, _, err := crdvalidation.NewSchemaValidator(internal)
		must(t, err)
		return crdSchema{structural: s, validator: validator}
	}
	t.Fatal("no v1beta1 in the ServiceSet CRD")
	return crdSchema{}
}
