package delivery

import (
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/apiaryhq/apiary/internal/adopt"
)

// takeOver runs before the sink applies an object that exists: it adopts
// one the sink did not deliver (adopt), and settles the adopting Update of
// one it did (settle). It reports whether it wrote the object already.
func (d *Direct) takeOver(ctx context.Context, it *item, live client.Object) (bool, error) {
	if live == nil || d.apiReader == nil {
		return false, nil
	}
	if live.GetAnnotations()[AnnotationAppliedDigest] == "" {
		if !d.adoption.Enabled() {
			return false, nil
		}
		return d.adopt(ctx, it)
	}
	if _, ok := live.GetAnnotations()[AnnotationAdopted]; ok {
		return false, d.settle(ctx, it)
	}
	return false, nil
}

// adopt takes over an object the sink is about to apply for the first time
// (it lacks AnnotationAppliedDigest) when the previous writers
// (DirectOptions.AdoptFrom) own fields of it: one Update, with the live
// object's resourceVersion as precondition, moves their fields to the
// sink's field manager (adopt.Migration), sets the desired fields and
// removes the labels and annotations they set that the desired object
// drops. It reports whether it wrote; when it did not, the caller applies
// as usual. The live object is read uncached, for its managedFields.
func (d *Direct) adopt(ctx context.Context, it *item) (bool, error) {
	live, err := d.readManaged(ctx, it)
	if err != nil || live == nil {
		return false, err
	}
	res, err := d.adoption.Plan(live.GetManagedFields(), it.obj.Object, time.Now())
	if err != nil || res.Moved == 0 {
		return false, err
	}
	obj, err := adopt.Adopted(live.Object, it.obj.Object, res)
	if err != nil {
		return false, err
	}
	u := &unstructured.Unstructured{Object: obj}
	ann := u.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[AnnotationAdopted] = strings.Join(d.adoption.From, ",")
	u.SetAnnotations(ann)
	if err := d.client.Update(ctx, u, client.FieldOwner(d.fieldManager)); err != nil {
		return false, fmt.Errorf("taking over %d fields from %v: %w", res.Moved, d.adoption.From, err)
	}
	log.FromContext(ctx).Info("took over an object another controller wrote",
		"object", it.id.Describe(), "from", d.adoption.From, "fields", res.Moved, "removed", len(res.Stale))
	return true, nil
}

// settle moves to the sink's apply entry, before it applies a change to an
// object it adopted (one with AnnotationAdopted), the fields its adopting
// Update recorded under its own Update entry, so that the apply removes those
// it no longer renders. It writes only the managed fields and removes the
// annotation, with a resourceVersion precondition.
func (d *Direct) settle(ctx context.Context, it *item) error {
	live, err := d.readManaged(ctx, it)
	if err != nil || live == nil {
		return err
	}
	if _, ok := live.GetAnnotations()[AnnotationAdopted]; !ok {
		return nil // settled since the cache saw it
	}
	self := adopt.Migration{To: d.fieldManager, Self: true}
	res, err := self.Plan(live.GetManagedFields(), it.obj.Object, time.Now())
	if err != nil {
		return err
	}
	patch, err := adopt.Patch(res.ManagedFields, live.GetResourceVersion(), AnnotationAdopted)
	if err != nil {
		return err
	}
	if err := d.client.Patch(ctx, live, patch, client.FieldOwner(d.fieldManager)); err != nil {
		return fmt.Errorf("moving %d fields of its adopting update to %s: %w", res.Moved, d.fieldManager, err)
	}
	return nil
}

// readManaged reads the live object from the API server, with its managed
// fields and as unstructured, so that fields the scheme's Go types lack are
// kept by the adopting Update; nil when it does not exist.
func (d *Direct) readManaged(ctx context.Context, it *item) (*unstructured.Unstructured, error) {
	if d.apiReader == nil {
		return nil, fmt.Errorf("taking over needs an uncached reader")
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(it.gvk)
	if err := d.apiReader.Get(ctx, client.ObjectKeyFromObject(it.obj), u); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	return u, nil
}
