package reconciler

import (
	"context"
	"encoding/json"
	"fmt"

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
	before, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p.before)
	if err != nil {
		return fmt.Errorf("converting the object: %w", err)
	}
	after, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return fmt.Errorf("converting the object: %w", err)
	}
	if observe {
		if err := unstructured.SetNestedField(after, obj.GetGeneration(), "status", "observedGeneration"); err != nil {
			return fmt.Errorf("setting observedGeneration: %w", err)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(after, obj); err != nil {
			return fmt.Errorf("setting observedGeneration: %w", err)
		}
	}
	statusChanged := !equality.Semantic.DeepEqual(before["status"], after["status"])
	metadataChanged := !equality.Semantic.DeepEqual(mutableMetadata(before), mutableMetadata(after))
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
