package flux

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestCommitOf(t *testing.T) {
	sha := "0123456789abcdef0123456789abcdef01234567"
	for _, tc := range []struct{ rev, want string }{
		{"main@sha1:" + sha, sha},
		{"sha1:" + sha, sha},
		{"main/" + sha, sha},
		{sha, sha},
		{"", ""},
	} {
		t.Run(tc.rev, func(t *testing.T) {
			NewWithT(t).Expect(CommitOf(tc.rev)).To(Equal(tc.want))
		})
	}
}

func TestNotReadyMessage(t *testing.T) {
	g := NewWithT(t)
	obj := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": []any{
		map[string]any{"type": "Reconciling", "status": "True", "message": "progressing"},
		map[string]any{"type": "Ready", "status": "False", "message": "kustomize build failed"},
	}}}}
	g.Expect(NotReadyMessage(obj)).To(Equal("kustomize build failed"))

	ready := &unstructured.Unstructured{Object: map[string]any{"status": map[string]any{"conditions": []any{
		map[string]any{"type": "Ready", "status": "True", "message": "Applied revision"},
	}}}}
	g.Expect(NotReadyMessage(ready)).To(BeEmpty())
	g.Expect(NotReadyMessage(&unstructured.Unstructured{Object: map[string]any{}})).To(BeEmpty())
}

func TestShort(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Short("0123456789abcdef")).To(Equal("0123456789ab"))
	g.Expect(Short("abc")).To(Equal("abc"))
}
