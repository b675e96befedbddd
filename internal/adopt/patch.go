package adopt

import (
	"encoding/json"
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Patch is a JSON patch that replaces an object's managed fields with
// entries. It also sets the resourceVersion the entries were planned from,
// which the API server checks as a precondition: when the object changed
// since, the patch fails with a conflict instead of overwriting the
// managedFields of a newer write. The annotations named by remove, which
// the object must have, are removed by the same patch.
func Patch(entries []metav1.ManagedFieldsEntry, resourceVersion string, remove ...string) (client.Patch, error) {
	if resourceVersion == "" {
		return nil, fmt.Errorf("patching managed fields needs the resourceVersion they were read at")
	}
	ops := []map[string]any{
		{"op": "replace", "path": "/metadata/managedFields", "value": entries},
		{"op": "replace", "path": "/metadata/resourceVersion", "value": resourceVersion},
	}
	for _, a := range remove {
		ops = append(ops, map[string]any{"op": "remove", "path": "/metadata/annotations/" + pointerEscape.Replace(a)})
	}
	data, err := json.Marshal(ops)
	if err != nil {
		return nil, fmt.Errorf("encoding the managed fields patch: %w", err)
	}
	return client.RawPatch(types.JSONPatchType, data), nil
}

// pointerEscape escapes a key for a JSON pointer (RFC 6901).
var pointerEscape = strings.NewReplacer("~", "~0", "/", "~1")
