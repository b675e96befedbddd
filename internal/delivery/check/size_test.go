package check

import (
	"encoding/base64"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestCheckSize(t *testing.T) {
	b64 := func(n int) string { return base64.StdEncoding.EncodeToString([]byte(strings.Repeat("x", n))) }
	obj := func(kind string, fields map[string]any) *unstructured.Unstructured {
		m := map[string]any{"apiVersion": "v1", "kind": kind, "metadata": map[string]any{"name": "o", "namespace": "ns"}}
		for k, v := range fields {
			m[k] = v
		}
		return &unstructured.Unstructured{Object: m}
	}
	half := MaxDataBytes / 2
	for _, tc := range []struct {
		name    string
		obj     *unstructured.Unstructured
		refused string // a part of the message; "" when accepted
	}{
		{"a Secret of exactly the bound", obj("Secret", map[string]any{"data": map[string]any{"a": b64(half), "b": b64(half)}}), ""},
		{"a Secret one byte over", obj("Secret", map[string]any{"data": map[string]any{"a": b64(half), "b": b64(half + 1)}}), "data: Too long"},
		{"stringData counts as decoded data", obj("Secret", map[string]any{"stringData": map[string]any{"a": strings.Repeat("x", half), "b": strings.Repeat("x", half+1)}}), "data: Too long"},
		{"stringData replaces the data key it names", obj("Secret", map[string]any{
			"data":       map[string]any{"a": b64(half + 1)},
			"stringData": map[string]any{"a": strings.Repeat("x", half), "b": strings.Repeat("x", half)}}), ""},
		{"keys do not count", obj("ConfigMap", map[string]any{"data": map[string]any{strings.Repeat("k", 200): strings.Repeat("x", MaxDataBytes)}}), ""},
		{"ConfigMap data and binaryData add up", obj("ConfigMap", map[string]any{
			"data": map[string]any{"a": strings.Repeat("x", half)}, "binaryData": map[string]any{"b": b64(half + 1)}}), "data: Too long"},
		{"ConfigMap data is not base64", obj("ConfigMap", map[string]any{"data": map[string]any{"a": b64(MaxDataBytes - 10)}}), "data: Too long"},
		{"a 1.2 MiB Secret is not bounded by its JSON", obj("Secret", map[string]any{"data": map[string]any{"a": b64(MaxDataBytes)}}), ""},
		{"another kind of 1 MiB JSON", obj("Service", map[string]any{"spec": map[string]any{"x": strings.Repeat("x", MaxObjectBytes-200)}}), ""},
		{"another kind over 1 MiB of JSON", obj("Service", map[string]any{"spec": map[string]any{"x": strings.Repeat("x", MaxObjectBytes)}}), "JSON encoding is"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			err := Size(tc.obj)
			if tc.refused == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tc.refused)))
			g.Expect(IsRefused(err)).To(BeTrue())
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue())
			g.Expect(err.Error()).To(HavePrefix(tc.obj.GetKind() + ` ns/o: not committed, the API server would refuse it: ` + tc.obj.GetKind() + ` "o" is invalid: `))
			g.Expect(err.Error()).NotTo(ContainSubstring("xxxx"), "no value in the message")
		})
	}
}

// FuzzDecodedLen: the length computed without decoding is that of the
// decoded value.
func FuzzDecodedLen(f *testing.F) {
	for _, s := range []string{"", "a", "ab", "abc", "abcd", strings.Repeat("z", 1000)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := base64.StdEncoding.EncodeToString(data)
		if got := decodedLen(s); got != len(data) {
			t.Fatalf("decodedLen(%q) = %d, want %d", s, got, len(data))
		}
	})
}

func TestDecodedLen_NeverNegative(t *testing.T) {
	for _, s := range []string{"=", "==", "===", "a=", "=a=="} {
		NewWithT(t).Expect(decodedLen(s)).To(BeNumerically(">=", 0), s)
	}
}

func TestSchemaFailure(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`failed to create typed patch object (ns/ss; k0rdent.mirantis.com/v1beta1, Kind=ServiceSet): .spec.cluster: expected string, got &value.valueUnstructured{Value:5}`,
			"does not fit the kind's schema: .spec.cluster: expected string, got &value.valueUnstructured{Value:5}"},
		{`failed to create typed patch object: .spec.bogus: field not declared in schema`,
			"does not fit the kind's schema: .spec.bogus: field not declared in schema"},
		{`something else`, `something else`},
	} {
		NewWithT(t).Expect(schemaFailure(tc.in)).To(Equal(tc.want))
	}
}
