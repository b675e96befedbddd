package delivery

import (
	"context"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/apiaryhq/apiary/internal/adopt"
)

// adopt moves to the sink's field manager the fields that the previous
// writers (DirectOptions.AdoptFrom) own on an object the sink is about to
// apply for the first time, so that the apply makes the sink their only
// owner, and fields they set that the desired object drops are removed.
// The live object is read uncached, for its managedFields.
func (d *Direct) adopt(ctx context.Context, it *item) error {
	if !d.adoption.Enabled() {
		return nil
	}
	live, err := readLive(ctx, d.apiReader, d.scheme, it.gvk, client.ObjectKeyFromObject(it.obj))
	if err != nil || live == nil {
		return err
	}
	res, err := d.adoption.Plan(live.GetManagedFields(), it.obj.Object, time.Now())
	if err != nil || res.Moved == 0 {
		return err
	}
	patch, err := adopt.Patch(res.ManagedFields, live.GetResourceVersion())
	if err != nil {
		return err
	}
	if err := d.client.Patch(ctx, live, patch, client.FieldOwner(d.fieldManager)); err != nil {
		return fmt.Errorf("moving the ownership of %d fields to %s: %w", res.Moved, d.fieldManager, err)
	}
	log.FromContext(ctx).Info("took over the fields of an object another controller wrote",
		"object", it.id.describe(), "from", d.adoption.From, "fields", res.Moved)
	return nil
}
