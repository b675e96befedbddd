package values

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// obj decodes a JSON or YAML document into a values map; "" gives nil.
func obj(t testing.TB, doc string) map[string]any {
	t.Helper()
	if doc == "" {
		return nil
	}
	var m map[string]any
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatalf("bad test document %q: %v", doc, err)
	}
	return m
}

// js encodes v as JSON for MatchJSON.
func js(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("encoding %v: %v", v, err)
	}
	return string(b)
}

// spec decodes a WorkspaceResourceSpec from YAML; "" gives nil.
func spec(t testing.TB, doc string) *workspacesv1.WorkspaceResourceSpec {
	t.Helper()
	if doc == "" {
		return nil
	}
	s := &workspacesv1.WorkspaceResourceSpec{}
	if err := yaml.UnmarshalStrict([]byte(doc), s); err != nil {
		t.Fatalf("bad test spec %q: %v", doc, err)
	}
	return s
}

func q(s string) *resource.Quantity {
	v := resource.MustParse(s)
	return &v
}

// scribble overwrites every map entry and list element of a values tree,
// to show that a result shares nothing with the inputs.
func scribble(v any) {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			scribble(e)
			t[k] = "scribbled"
		}
		t["scribbled"] = true
	case []any:
		for i, e := range t {
			scribble(e)
			t[i] = "scribbled"
		}
	}
}
