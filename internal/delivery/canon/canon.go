// Package canon holds the Canonical form of the objects Apiary delivers and
// compares: JSON-normalised, without status and server-owned metadata,
// digested; Secret stringData folded into data; and whether a live object
// holds every field of a desired one.
package canon

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// AnnotationAppliedDigest holds the digest of the desired object a sink
// last applied; the canonical form leaves it out.
const AnnotationAppliedDigest = "apiary.exalsius.ai/applied-digest"

// serverFields are metadata fields the API server owns; they are dropped
// from desired objects before digesting and applying.
var serverFields = []string{
	"resourceVersion", "uid", "creationTimestamp", "generation", "managedFields",
	"selfLink", "deletionTimestamp", "deletionGracePeriodSeconds",
}

// Canonical returns a deep copy of obj in the form that is digested and
// applied: JSON-normalised values, no status, no server-owned metadata and
// no applied-digest annotation. It fails on values JSON cannot hold.
func Canonical(obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	data, err := json.Marshal(obj.Object)
	if err != nil {
		return nil, fmt.Errorf("encoding object: %w", err)
	}
	m := map[string]any{}
	if err := utiljson.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("decoding object: %w", err)
	}
	out := &unstructured.Unstructured{Object: m}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		for _, f := range serverFields {
			delete(md, f)
		}
		if ann, ok := md["annotations"].(map[string]any); ok {
			delete(ann, AnnotationAppliedDigest)
			if len(ann) == 0 {
				delete(md, "annotations")
			}
		}
	}
	return out, nil
}

// Digest returns "sha256:<hex>" of the Canonical JSON form of obj (see the
// applied-digest annotation), ignoring status, server-owned metadata and any
// applied-digest annotation it carries.
func Digest(obj *unstructured.Unstructured) (string, error) {
	c, err := Canonical(obj)
	if err != nil {
		return "", err
	}
	return DigestOf(c.Object)
}

func DigestOf(m map[string]any) (string, error) {
	data, err := json.Marshal(m) // map keys are sorted, so the encoding is Canonical
	if err != nil {
		return "", fmt.Errorf("encoding object: %w", err)
	}
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// SecretStringDataToData returns a copy of a core/v1 Secret's map with
// stringData folded into data, as the API server stores it.
func SecretStringDataToData(m map[string]any) map[string]any {
	sd, ok := m["stringData"].(map[string]any)
	if !ok {
		return m
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	delete(out, "stringData")
	data := map[string]any{}
	if d, ok := m["data"].(map[string]any); ok {
		for k, v := range d {
			data[k] = v
		}
	}
	for k, v := range sd {
		if s, ok := v.(string); ok {
			data[k] = base64.StdEncoding.EncodeToString([]byte(s))
		}
	}
	out["data"] = data
	return out
}

// Restrict keeps the parts of want that survive a round trip through a Go
// type (rt is that round trip), with rt's normalised values. Fields the type
// does not know, or omits because they are empty, are left out, so they
// neither count as drift nor cause re-applies; their changes are still
// caught by the digest.
func Restrict(want, rt any) any {
	switch w := want.(type) {
	case map[string]any:
		r, ok := rt.(map[string]any)
		if !ok {
			return rt
		}
		out := make(map[string]any, len(w))
		for k, v := range w {
			if rv, ok := r[k]; ok {
				out[k] = Restrict(v, rv)
			}
		}
		return out
	case []any:
		r, ok := rt.([]any)
		if !ok || len(r) != len(w) {
			return rt
		}
		out := make([]any, len(w))
		for i := range w {
			out[i] = Restrict(w[i], r[i])
		}
		return out
	default:
		return rt
	}
}

// Subset reports whether every field of want is present in have with the
// same value. Maps are compared key by key; lists of the same length index
// by index; a longer live list must hold want's items in order (other field
// managers may add items to associative lists). Empty maps, empty lists and
// nulls in want match absent fields.
func Subset(want, have any) bool {
	switch w := want.(type) {
	case nil:
		return have == nil
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return have == nil && len(w) == 0
		}
		for k, wv := range w {
			hv, ok := h[k]
			if !ok {
				if isEmpty(wv) {
					continue
				}
				return false
			}
			if !Subset(wv, hv) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok {
			return have == nil && len(w) == 0
		}
		if len(h) == len(w) {
			for i := range w {
				if !Subset(w[i], h[i]) {
					return false
				}
			}
			return true
		}
		i := 0
		for j := 0; i < len(w) && j < len(h); j++ {
			if Subset(w[i], h[j]) {
				i++
			}
		}
		return i == len(w)
	default:
		return scalarEqual(want, have)
	}
}

func isEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

// scalarEqual compares JSON scalars, numbers by value whatever their Go type.
func scalarEqual(a, b any) bool {
	if ai, ok := toInt(a); ok {
		if bi, ok := toInt(b); ok {
			return ai == bi
		}
	}
	if af, ok := toFloat(a); ok {
		bf, ok := toFloat(b)
		return ok && (af == bf || math.IsNaN(af) && math.IsNaN(bf))
	}
	return a == b
}

func toInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	}
	return 0, false
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	}
	if i, ok := toInt(v); ok {
		return float64(i), true
	}
	return 0, false
}

func IsSecret(gvk schema.GroupVersionKind) bool { return gvk.Group == "" && gvk.Kind == "Secret" }

// HasData reports whether a live Secret came with its data.
func HasData(m map[string]any) bool {
	_, data := m["data"]
	_, stringData := m["stringData"]
	return data || stringData
}

// WithoutData is a copy of a Secret without its data fields.
func WithoutData(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != "data" && k != "stringData" {
			out[k] = v
		}
	}
	return out
}
