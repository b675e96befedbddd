package desired

import (
	"crypto/sha256"
	"encoding/json"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/lru"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// admittedChecks remembers the inputs of recent admission checks that
// passed, by the SHA-256 of everything the check reads. Every reconcile of
// a workspace checks its objects again before they reach the sink, and the
// check parses each values text (a YAML document) twice; a workspace whose
// release is being installed is reconciled on every change of its
// ServiceSet's status, with the same objects each time. A refusal is not
// remembered: it is rare, and its message is written from a fresh check.
var admittedChecks = lru.New(4096)

// admittedKey is the digest of what checkAdmitted reads: the resolved
// resources, the class's injection paths, every ServiceSet's services and
// every Secret's and ConfigMap's data among objs. False when it cannot be
// computed (the check then runs without the memo).
func admittedKey(objs []*unstructured.Unstructured, class *workspacesv1.WorkspaceClass,
	resolved workspacesv1.WorkspaceResourceSpec) ([sha256.Size]byte, bool) {
	read := []any{resolved, class.Spec.ResourceInjection}
	for _, o := range objs {
		switch o.GetKind() {
		case "ServiceSet", "Secret", "ConfigMap":
		default:
			continue
		}
		part := map[string]any{"apiVersion": o.GetAPIVersion(), "kind": o.GetKind(),
			"namespace": o.GetNamespace(), "name": o.GetName()}
		for _, field := range []string{"spec", "data", "stringData", "binaryData"} {
			if v, ok := o.Object[field]; ok {
				part[field] = v
			}
		}
		read = append(read, part)
	}
	data, err := json.Marshal(read)
	if err != nil {
		return [sha256.Size]byte{}, false
	}
	return sha256.Sum256(data), true
}
