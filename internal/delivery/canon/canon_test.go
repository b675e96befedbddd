package canon

import (
	"math"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestSubset(t *testing.T) {
	m := func(kv ...any) map[string]any {
		out := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			out[kv[i].(string)] = kv[i+1]
		}
		return out
	}
	l := func(v ...any) []any { return v }
	tests := []struct {
		name       string
		want, have any
		ok         bool
	}{
		{name: "equal scalars", want: "a", have: "a", ok: true},
		{name: "different scalars", want: "a", have: "b"},
		{name: "numbers by value", want: int64(2), have: float64(2), ok: true},
		{name: "int kinds", want: int64(2), have: int(2), ok: true},
		{name: "number and string", want: int64(2), have: "2"},
		{name: "extra live fields (server defaults)", want: m("a", "1"), have: m("a", "1", "b", true), ok: true},
		{name: "missing field", want: m("a", "1", "b", "2"), have: m("a", "1")},
		{name: "changed nested field", want: m("s", m("x", int64(1))), have: m("s", m("x", int64(2), "y", int64(3)))},
		{name: "empty map matches absent", want: m("labels", m()), have: m(), ok: true},
		{name: "null matches absent", want: m("x", nil), have: m(), ok: true},
		{name: "null against a value", want: m("x", nil), have: m("x", "v")},
		{name: "list index by index", want: l(m("n", "a"), m("n", "b")), have: l(m("n", "a", "d", true), m("n", "b")), ok: true},
		{name: "list reordered", want: l("a", "b"), have: l("b", "a")},
		{name: "list shorter live", want: l("a", "b"), have: l("a")},
		{name: "list with foreign items in order", want: l("a", "b"), have: l("x", "a", "y", "b"), ok: true},
		{name: "list with foreign items out of order", want: l("a", "b"), have: l("b", "x", "a")},
		{name: "map against list", want: m("a", "1"), have: l("a")},
		{name: "NaN", want: math.NaN(), have: math.NaN(), ok: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(Subset(tt.want, tt.have)).To(Equal(tt.ok))
		})
	}
}

func TestDigestIgnoresServerFieldsAndStatus(t *testing.T) {
	g := NewWithT(t)
	base := configMap("ns", "cm", map[string]string{"k": "v"})
	d0, err := Digest(base)
	g.Expect(err).NotTo(HaveOccurred())

	withServer := base.DeepCopy()
	withServer.SetResourceVersion("42")
	withServer.SetUID("abc")
	withServer.SetAnnotations(map[string]string{AnnotationAppliedDigest: "sha256:old"})
	withServer.Object["status"] = map[string]any{"phase": "x"}
	d1, err := Digest(withServer)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d1).To(Equal(d0))

	changed := configMap("ns", "cm", map[string]string{"k": "w"})
	d2, err := Digest(changed)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d2).NotTo(Equal(d0))
	g.Expect(d0).To(HavePrefix("sha256:"))

	bad := &unstructured.Unstructured{Object: map[string]any{"kind": "X", "f": func() {}}}
	_, err = Digest(bad)
	g.Expect(err).To(HaveOccurred(), "values JSON cannot hold are an error, not a panic")
}

func TestSecretStringDataIsComparedAsData(t *testing.T) {
	g := NewWithT(t)
	in := map[string]any{"data": map[string]any{"a": "YQ=="}, "stringData": map[string]any{"b": "b"}}
	out := SecretStringDataToData(in)
	g.Expect(out).To(Equal(map[string]any{"data": map[string]any{"a": "YQ==", "b": "Yg=="}}))
	g.Expect(in).To(HaveKey("stringData"), "the input is not modified")
}

func TestRestrictKeepsOnlyFieldsTheTypeHolds(t *testing.T) {
	g := NewWithT(t)
	want := map[string]any{"spec": map[string]any{"known": "1000m", "unknown": "x"}, "list": []any{"a"}}
	rt := map[string]any{"spec": map[string]any{"known": "1", "other": ""}, "list": []any{"a"}, "status": map[string]any{}}
	g.Expect(Restrict(want, rt)).To(Equal(map[string]any{"spec": map[string]any{"known": "1"}, "list": []any{"a"}}))
}

// configMap returns a desired ConfigMap.
func configMap(ns, name string, data map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetNamespace(ns)
	u.SetName(name)
	_ = unstructured.SetNestedStringMap(u.Object, data, "data")
	return u
}
