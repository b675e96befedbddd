package adopt

import (
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Patch is a JSON patch that replaces an object's managed fields with
// entries. It also sets the resourceVersion the entries were planned from,
// which the API server checks as a precondition: when the object changed
// since, the patch fails with a conflict instead of overwriting the
// managedFields of a newer write.
func Patch(entries []metav1.ManagedFieldsEntry, resourceVersion string) (client.Patch, error) {
	if resourceVersion == "" {
		return nil, fmt.Errorf("patching managed fields needs the resourceVersion they were read at")
	}
	ops := []map[string]any{
		{"op": "replace", "path": "/metadata/managedFields", "value": entries},
		{"op": "replace", "path": "/metadata/resourceVersion", "value": resourceVersion},
	}
	data, err := json.Marshal(ops)
	if err != nil {
		return nil, fmt.Errorf("encoding the managed fields patch: %w", err)
	}
	return client.RawPatch(types.JSONPatchType, data), nil
}
