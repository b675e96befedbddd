// Package flux reads what Flux's kustomize-controller says of a commit: the
// Kustomization kind, the commit of a revision it applied, and why it is
// not ready.
package flux

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// KustomizationGVK is the kind of Flux object whose lastAppliedRevision
// tells whether a commit is applied.
var KustomizationGVK = schema.GroupVersionKind{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Kind: "Kustomization"}

// CommitOf returns the commit SHA of a Flux revision such as
// "main@sha1:<sha>", "sha1:<sha>" or a bare SHA.
func CommitOf(rev string) string {
	if i := strings.LastIndex(rev, ":"); i >= 0 {
		return rev[i+1:]
	}
	if i := strings.LastIndex(rev, "/"); i >= 0 { // legacy "main/<sha>"
		return rev[i+1:]
	}
	return rev
}

// NotReadyMessage returns the message of a Ready=False condition.
func NotReadyMessage(obj *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == "Ready" && m["status"] == "False" {
			msg, _ := m["message"].(string)
			return msg
		}
	}
	return ""
}

// Short abbreviates a commit SHA for messages.
func Short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
