package check

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/apiaryhq/apiary/internal/delivery/canon"
)

// Size bounds of the objects a Git sink commits. A dry run does not reach
// etcd, so it cannot tell an object too large to store: Size checks sizes
// itself, one bound per kind.
const (
	// MaxDataBytes bounds the data of a Secret or a ConfigMap: the API
	// server's own validation refuses more than 1 MiB of values (keys are
	// not counted), so this is exactly the server's bound.
	MaxDataBytes = 1 << 20
	// MaxObjectBytes bounds the JSON encoding of any other object. etcd
	// refuses a value over 1.5 MiB (its default --max-request-bytes); the
	// server adds managedFields and metadata and controllers add status, so
	// a desired object of at most 1 MiB leaves them half a MiB.
	MaxObjectBytes = 1 << 20
)

// Size refuses an object that is larger than its kind's bound: a
// RefusedError with an Invalid answer, as the API server's own would be.
func Size(obj *unstructured.Unstructured) error {
	gvk := obj.GroupVersionKind()
	refused := func(field, why string) error {
		return &RefusedError{Object: canon.Describe(gvk.Kind, obj.GetNamespace(), obj.GetName()),
			Err: invalid(gvk.GroupKind(), obj.GetName(), field, why)}
	}
	if gvk.Group == "" && (gvk.Kind == "Secret" || gvk.Kind == "ConfigMap") {
		n := dataBytes(obj.Object)
		if n <= MaxDataBytes {
			return nil
		}
		return refused("data", fmt.Sprintf("Too long: holds %d bytes of values, more than the %d bytes a %s may hold", n, MaxDataBytes, gvk.Kind))
	}
	data, err := json.Marshal(obj.Object)
	if err != nil {
		return fmt.Errorf("encoding the object to measure it: %w", err)
	}
	if len(data) <= MaxObjectBytes {
		return nil
	}
	return refused("", fmt.Sprintf("Too long: its JSON encoding is %d bytes, more than the %d bytes Apiary commits of one object", len(data), MaxObjectBytes))
}

// dataBytes is the size of the values of a Secret or ConfigMap as the API
// server counts them: data decoded from base64, stringData folded into data
// (it wins over a key of data), and binaryData decoded.
func dataBytes(m map[string]any) int {
	sizes := map[string]int{}
	if d, ok := m["data"].(map[string]any); ok {
		secret := m["kind"] == "Secret"
		for k, v := range d {
			s, _ := v.(string)
			if secret {
				sizes[k] = decodedLen(s)
			} else {
				sizes[k] = len(s)
			}
		}
	}
	if d, ok := m["stringData"].(map[string]any); ok {
		for k, v := range d {
			s, _ := v.(string)
			sizes[k] = len(s)
		}
	}
	n := 0
	for _, size := range sizes {
		n += size
	}
	if d, ok := m["binaryData"].(map[string]any); ok {
		for _, v := range d {
			s, _ := v.(string)
			n += decodedLen(s)
		}
	}
	return n
}

// decodedLen is the length of standard base64 s once decoded, without
// decoding it; the server refuses a value that is not base64 anyway.
func decodedLen(s string) int {
	pad := len(s) - len(strings.TrimRight(s, "="))
	return max(base64.StdEncoding.DecodedLen(len(s))-min(pad, 2), 0)
}

// invalid is an Invalid error of the API server's shape for object name of
// kind gk, its field (empty for the whole object) refused for why.
func invalid(gk schema.GroupKind, name, field, why string) error {
	msg := why
	if field != "" {
		msg = field + ": " + why
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    422,
		Reason:  metav1.StatusReasonInvalid,
		Message: fmt.Sprintf("%s %q is invalid: %s", gk.String(), name, msg),
		Details: &metav1.StatusDetails{Group: gk.Group, Kind: gk.Kind, Name: name,
			Causes: []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Field: field, Message: why}}},
	}}
}
