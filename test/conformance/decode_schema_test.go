package conformance

// The schema side of the decode property (decode_test.go): the string
// leaves of a CRD schema, the smallest object its structure asks for, and an
// object with one leaf set.

import (
	"encoding/json"
	"regexp"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// walkLeaves collects every string-typed leaf under s.
func walkLeaves(crd *apiextensionsv1.CustomResourceDefinition, s apiextensionsv1.JSONSchemaProps, path []string, status bool, out *[]fieldLeaf) {
	if s.XIntOrString || s.Type == "string" {
		*out = append(*out, fieldLeaf{crd: crd, path: append([]string(nil), path...), schema: s, status: status})
		return
	}
	switch s.Type {
	case "object":
		keys := make([]string, 0, len(s.Properties))
		for k := range s.Properties {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			walkLeaves(crd, s.Properties[k], append(path, k), status, out)
		}
		if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
			walkLeaves(crd, *s.AdditionalProperties.Schema, append(path, "{}"), status, out)
		}
	case "array":
		if s.Items != nil && s.Items.Schema != nil {
			walkLeaves(crd, *s.Items.Schema, append(path, "[]"), status, out)
		}
	}
}

// plausible are the strings minimal values are picked from, the first
// that the schema's pattern, enum and lengths allow.
var plausible = []string{"a", "a1", "1", "1m", "1Gi", "2026-01-02T03:04:05Z", "nvidia.com/gpu", "a.b", "https://a.example.com", "a-b"}

// minimal is the smallest value the schema's structure asks for: the
// required properties of an object, a plausible string.
func minimal(s apiextensionsv1.JSONSchemaProps) any {
	if s.XIntOrString {
		return "1"
	}
	switch s.Type {
	case "object":
		o := map[string]any{}
		for _, r := range s.Required {
			o[r] = minimal(s.Properties[r])
		}
		return o
	case "array":
		a := []any{}
		for i := int64(0); s.MinItems != nil && i < *s.MinItems; i++ {
			a = append(a, minimal(*s.Items.Schema))
		}
		return a
	case "integer", "number":
		if s.Minimum != nil {
			return int64(*s.Minimum)
		}
		return int64(1)
	case "boolean":
		return false
	case "string":
		for _, e := range s.Enum {
			var ev string
			if json.Unmarshal(e.Raw, &ev) == nil {
				return ev
			}
		}
		for _, c := range plausible {
			if localOK(s, c) {
				return c
			}
		}
		return "a"
	}
	return map[string]any{}
}

// localOK applies the checks the server makes with the same Go code
// (pattern with Go's regexp, enum, lengths), to spare it the requests it
// would refuse anyway. Formats and CEL rules are left to the server.
func localOK(s apiextensionsv1.JSONSchemaProps, v string) bool {
	if s.Pattern != "" {
		if ok, err := regexp.MatchString(s.Pattern, v); err != nil || !ok {
			return false
		}
	}
	if len(s.Enum) > 0 {
		found := false
		for _, e := range s.Enum {
			var ev any
			if json.Unmarshal(e.Raw, &ev) == nil && ev == v {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	n := int64(len([]rune(v)))
	return (s.MaxLength == nil || n <= *s.MaxLength) && (s.MinLength == nil || n >= *s.MinLength)
}

// withValue returns a deep copy of base with v at the leaf, the objects on
// the way created with their required fields where missing.
func withValue(base map[string]any, l fieldLeaf, v any) map[string]any {
	raw, _ := json.Marshal(base)
	obj := map[string]any{}
	_ = json.Unmarshal(raw, &obj)
	root := l.crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	for _, ver := range l.crd.Spec.Versions {
		if ver.Storage {
			root = ver.Schema.OpenAPIV3Schema
		}
	}
	var cur any = obj
	s := *root
	for i, k := range l.path {
		last := i == len(l.path)-1
		switch k {
		case "[]":
			s = *s.Items.Schema
			arr := cur.([]any)
			if last {
				arr[0] = v
				return obj
			}
			cur = arr[0]
		case "{}":
			s = *s.AdditionalProperties.Schema
			m := cur.(map[string]any)
			key := "k"
			for mk := range m {
				key = mk
				break
			}
			if last {
				m[key] = v
				return obj
			}
			if _, ok := m[key]; !ok {
				m[key] = ensure(s, l.path[i+1])
			}
			cur = m[key]
		default:
			s = s.Properties[k]
			m := cur.(map[string]any)
			if last {
				m[k] = v
				return obj
			}
			next, ok := m[k]
			if !ok || next == nil {
				next = ensure(s, l.path[i+1])
				m[k] = next
			}
			if a, ok := next.([]any); ok && len(a) == 0 {
				next = []any{minimal(*s.Items.Schema)}
				m[k] = next
			}
			cur = next
		}
	}
	return obj
}

// ensure is the minimal value of s, an array with one minimal item when
// the path goes on into it.
func ensure(s apiextensionsv1.JSONSchemaProps, next string) any {
	v := minimal(s)
	if a, ok := v.([]any); ok && next == "[]" && len(a) == 0 {
		return []any{minimal(*s.Items.Schema)}
	}
	return v
}
