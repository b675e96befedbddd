package desired

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/apiaryhq/apiary/internal/delivery/canon"
	"github.com/apiaryhq/apiary/internal/workspace/values"
)

// The render cache keeps objects encoded; what it hands out is what the
// renderer gave, and every use gets objects of its own.
func TestRenderCacheEncoding(t *testing.T) {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "k0rdent.mirantis.com/v1beta1", "kind": "ServiceSet",
		"metadata": map[string]any{"name": "wsd-c-w", "namespace": "team", "labels": map[string]any{"a": "b"},
			"ownerReferences": []any{map[string]any{"kind": "WorkspaceDeployment", "name": "w", "controller": true}}},
		"spec": map[string]any{"cluster": "c", "replicas": int64(3), "ratio": 0.5,
			"services": []any{map[string]any{"name": "s", "values": "{\"a\":1}"}}},
	}}
	d := &Set{fingerprint: "fp", Digest: "sha256:x", Objects: []*unstructured.Unstructured{obj},
		Injected: []values.Overwrite{{}}}
	e, err := encodeSet(d)
	if err != nil {
		t.Fatal(err)
	}
	var c renderCache
	key := types.NamespacedName{Namespace: "team", Name: "w"}
	c.put(key, e)
	if c.get(key, "other") != nil {
		t.Fatal("a rendering of other inputs is a miss")
	}
	first, err := c.get(key, "fp").decode()
	if err != nil {
		t.Fatal(err)
	}
	if first.Digest != d.Digest || first.fingerprint != d.fingerprint || len(first.Injected) != 1 || len(first.Objects) != 1 {
		t.Fatalf("decoded set %+v, want the fields of %+v", first, d)
	}
	if !equality.Semantic.DeepEqual(first.Objects[0].Object, obj.Object) {
		t.Fatalf("decoded %v, want %v", first.Objects[0].Object, obj.Object)
	}
	want, _ := canon.Digest(obj)
	if got, _ := canon.Digest(first.Objects[0]); got != want {
		t.Fatalf("digest %s, want %s", got, want)
	}
	first.Objects[0].SetName("changed")
	second, err := c.get(key, "fp").decode()
	if err != nil {
		t.Fatal(err)
	}
	if second.Objects[0].GetName() != "wsd-c-w" {
		t.Fatal("a change to a decoded object reached the cache")
	}
	c.forget(key)
	if c.get(key, "fp") != nil {
		t.Fatal("forgotten, yet cached")
	}
}
