package reconciler

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Patcher persists a reconciled object with at most two requests, one
// for its whole status and one for its metadata, and none when nothing
// changed. Writing the status at once means a reader never sees conditions
// ahead of the fields they summarise (Ready=True before the ready count).
// Apiary is the only writer of its objects' status, so a merge patch without
// conflict resolution is enough.
type Patcher struct {
	client client.Client
	before client.Object
}

// NewPatcher starts a patcher from the object as it was read.
func NewPatcher(c client.Client, obj client.Object) *Patcher {
	return &Patcher{client: c, before: obj.DeepCopyObject().(client.Object)}
}

// Patch writes what changed since the last patch; with observe it first
// records the object's generation as status.observedGeneration.
func (p *Patcher) Patch(ctx context.Context, obj client.Object, observe bool) error {
	if p.unchanged(obj, observe) {
		p.before = obj.DeepCopyObject().(client.Object)
		return nil // the steady state, decided on the typed object
	}
	c, err := p.converted(obj, observe)
	if err != nil {
		return err
	}
	before, after, statusChanged, metadataChanged := c.before, c.after, c.statusChanged, c.metadataChanged
	if !statusChanged && !metadataChanged {
		p.before = obj.DeepCopyObject().(client.Object)
		return nil // the steady state: no request, no patch to encode
	}
	// Both patches are computed before either is sent: each request
	// overwrites obj with the server's answer, which does not hold the
	// other request's changes yet (a finalizer removed in the same
	// reconcile as a status change would otherwise be lost).
	diff, err := client.MergeFrom(p.before).Data(obj)
	if err != nil {
		return fmt.Errorf("computing the patch: %w", err)
	}
	if statusChanged {
		data := diff
		if !statusWritten(before) {
			// The stored object has no status yet: a diff against the Go
			// zero values would leave out required fields that are still
			// zero (a Colony's readyClusters), and the API server would
			// refuse the patch. Send the whole status instead.
			if data, err = json.Marshal(map[string]any{"status": after["status"]}); err != nil {
				return fmt.Errorf("encoding the status: %w", err)
			}
		}
		if err := p.client.Status().Patch(ctx, obj, client.RawPatch(types.MergePatchType, data), client.FieldOwner(FieldOwner)); err != nil {
			return fmt.Errorf("writing status: %w", err)
		}
	}
	if metadataChanged {
		// The status subresource ignored the metadata of the same diff; the
		// object's endpoint ignores its status.
		if err := p.client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, diff), client.FieldOwner(FieldOwner)); err != nil {
			return fmt.Errorf("writing metadata: %w", err)
		}
	}
	p.before = obj.DeepCopyObject().(client.Object)
	return nil
}

// conversion is an object and what it was read as, both converted to
// maps, and which of the parts a patch writes differ.
type conversion struct {
	before, after                  map[string]any
	statusChanged, metadataChanged bool
}

// converted compares the object with what was read by converting both to
// maps, as the patch sees them; with observe it first records the
// generation in status.observedGeneration.
func (p *Patcher) converted(obj client.Object, observe bool) (conversion, error) {
	before, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p.before)
	if err != nil {
		return conversion{}, fmt.Errorf("converting the object: %w", err)
	}
	after, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return conversion{}, fmt.Errorf("converting the object: %w", err)
	}
	if observe {
		if err := unstructured.SetNestedField(after, obj.GetGeneration(), "status", "observedGeneration"); err != nil {
			return conversion{}, fmt.Errorf("setting observedGeneration: %w", err)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(after, obj); err != nil {
			return conversion{}, fmt.Errorf("setting observedGeneration: %w", err)
		}
	}
	return conversion{before: before, after: after,
		statusChanged:   !equality.Semantic.DeepEqual(before["status"], after["status"]),
		metadataChanged: !equality.Semantic.DeepEqual(mutableMetadata(before), mutableMetadata(after))}, nil
}

// unchanged reports, on the typed object and without converting it, that
// neither its status nor the metadata a reconciler changes differ from what
// was read: most reconciles change nothing, and converting both objects to
// maps to find out cost more than the rest of such a reconcile. With
// observe it records the generation in status.observedGeneration first,
// as the conversion path does. Objects without a Status struct holding an
// int64 ObservedGeneration, and any difference (also one the conversion
// would not see, such as a time's fraction of a second), take the
// conversion path.
func (p *Patcher) unchanged(obj client.Object, observe bool) bool {
	after, before := statusOf(obj), statusOf(p.before)
	if !after.IsValid() || !before.IsValid() {
		return false
	}
	if observe {
		gen := after.FieldByName("ObservedGeneration")
		if !gen.IsValid() || gen.Kind() != reflect.Int64 || !gen.CanSet() {
			return false
		}
		gen.SetInt(obj.GetGeneration())
	}
	return equality.Semantic.DeepEqual(before.Interface(), after.Interface()) &&
		equality.Semantic.DeepEqual(p.before.GetLabels(), obj.GetLabels()) &&
		equality.Semantic.DeepEqual(p.before.GetAnnotations(), obj.GetAnnotations()) &&
		equality.Semantic.DeepEqual(p.before.GetFinalizers(), obj.GetFinalizers()) &&
		equality.Semantic.DeepEqual(p.before.GetOwnerReferences(), obj.GetOwnerReferences())
}

// statusOf is the Status field of a typed object (a pointer to a struct),
// the zero Value when it has none.
func statusOf(obj client.Object) reflect.Value {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return reflect.Value{}
	}
	f := v.Elem().FieldByName("Status")
	if f.Kind() != reflect.Struct {
		return reflect.Value{}
	}
	return f
}

// statusWritten reports whether an object's status was written before:
// every status Apiary writes has conditions.
func statusWritten(u map[string]any) bool {
	conds, _, _ := unstructured.NestedSlice(u, "status", "conditions")
	return len(conds) > 0
}

// mutableMetadata is the metadata a reconciler changes.
func mutableMetadata(u map[string]any) map[string]any {
	meta, _ := u["metadata"].(map[string]any)
	out := map[string]any{}
	for _, k := range []string{"labels", "annotations", "finalizers", "ownerReferences"} {
		if v, ok := meta[k]; ok {
			out[k] = v
		}
	}
	return out
}
