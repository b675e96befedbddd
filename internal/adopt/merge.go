package adopt

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
)

// Adopted returns the object that a single Update of live turns into what
// Plan and an apply of desired would make of it: live with every field of
// desired set (maps merged key by key, any other value, lists included,
// replaced), the stale labels and annotations of res removed, and the
// managed fields of res. Sent with live's resourceVersion, it adopts an
// object with one write. The API server records the fields that write
// changes under To's Update entry, which a Migration with Self takes over
// before To's next apply. live is not modified.
func Adopted(live, desired map[string]any, res Result) (map[string]any, error) {
	out, _ := merge(runtime.DeepCopyJSONValue(live), desired).(map[string]any)
	if out == nil {
		return nil, fmt.Errorf("adopting: the live object is not an object")
	}
	meta, _ := out["metadata"].(map[string]any)
	if meta == nil {
		return nil, fmt.Errorf("adopting: the live object has no metadata")
	}
	for _, p := range res.Stale {
		if m, ok := meta[*p[1].FieldName].(map[string]any); ok {
			delete(m, *p[2].FieldName)
		}
	}
	entries := make([]any, 0, len(res.ManagedFields))
	for i := range res.ManagedFields {
		e, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&res.ManagedFields[i])
		if err != nil {
			return nil, fmt.Errorf("adopting: encoding managed fields: %w", err)
		}
		entries = append(entries, e)
	}
	meta["managedFields"] = entries
	return out, nil
}

// merge sets the fields of desired on live: maps key by key, any other
// value replaced by a copy of desired's.
func merge(live, desired any) any {
	dm, ok := desired.(map[string]any)
	lm, isMap := live.(map[string]any)
	if !ok || !isMap {
		return runtime.DeepCopyJSONValue(desired)
	}
	for k, v := range dm {
		lm[k] = merge(lm[k], v)
	}
	return lm
}
