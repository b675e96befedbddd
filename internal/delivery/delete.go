package delivery

import (
	"context"
	"errors"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	"github.com/apiaryhq/apiary/internal/delivery/canon"
)

// prune deletes the object of a stale entry when it still belongs to owner.
// It reports whether a delete was sent and whether the entry must stay in
// the inventory (the object could not be checked or deleted).
func (d *Direct) prune(ctx context.Context, owner Owner, e commonv1.ResourceRef) (pruned, keep bool, err error) {
	id, err := canon.ParseID(e.ID)
	if err != nil {
		return false, false, fmt.Errorf("dropping inventory entry: %w", err)
	}
	st, err := d.remove(ctx, owner, id, e.Version)
	if err != nil {
		return false, true, err
	}
	if st == removeSent {
		log.FromContext(ctx).V(1).Info("pruned object", "object", id.Describe(), "owner", owner.String())
	}
	return st == removeSent, false, nil
}

// removeState is what remove found or did.
type removeState int

const (
	removeGone        removeState = iota // no such object, or it belongs to someone else
	removeTerminating                    // being deleted already
	removeSent                           // a delete was sent now
)

// remove deletes the object of id when it still belongs to owner (ownsLive:
// it carries owner's labels, or an ownerReference to owner and no Apiary
// owner labels), with preconditions on the live object's UID and
// resourceVersion so that an object taken over since the cache saw it is
// left alone.
func (d *Direct) remove(ctx context.Context, owner Owner, id canon.ObjectID, version string) (removeState, error) {
	gvk := id.GroupVersionKind(version)
	live, err := d.getLive(ctx, gvk, client.ObjectKey{Namespace: id.Namespace, Name: id.Name})
	if meta.IsNoMatchError(err) {
		return removeGone, nil // the kind is not served any more, so the object is gone
	}
	if err != nil {
		return removeGone, fmt.Errorf("%s: reading the live object: %w", id.Describe(), err)
	}
	if live == nil || !owner.ownsLive(live) {
		return removeGone, nil
	}
	if live.GetDeletionTimestamp() != nil {
		return removeTerminating, nil
	}
	uid, rv := live.GetUID(), live.GetResourceVersion()
	target := &metav1.PartialObjectMetadata{}
	target.SetGroupVersionKind(gvk)
	target.SetNamespace(id.Namespace)
	target.SetName(id.Name)
	err = d.client.Delete(ctx, target, client.PropagationPolicy(metav1.DeletePropagationBackground),
		client.Preconditions{UID: &uid, ResourceVersion: &rv})
	if apierrors.IsNotFound(err) {
		return removeGone, nil
	}
	if err != nil {
		return removeGone, fmt.Errorf("%s: deleting: %w", id.Describe(), err)
	}
	return removeSent, nil
}

// Delete removes every object of prev that still belongs to owner (see
// remove), and reports done once none of them exists any more. Objects held
// by another owner, and entries whose ID names no object, are left alone.
func (d *Direct) Delete(ctx context.Context, owner Owner, prev *commonv1.ResourceInventory) (bool, error) {
	if err := owner.Validate(); err != nil {
		return false, err
	}
	if prev == nil {
		return true, nil
	}
	entries := append([]commonv1.ResourceRef(nil), prev.Entries...)
	sort.SliceStable(entries, func(i, j int) bool { return refRank(entries[i]) > refRank(entries[j]) })
	done := true
	var errs []error
	for _, e := range entries {
		id, err := canon.ParseID(e.ID)
		if err != nil {
			continue
		}
		st, err := d.remove(ctx, owner, id, e.Version)
		if err != nil {
			// A conflict means the object changed since the cache saw it;
			// the next call looks again.
			if !apierrors.IsConflict(err) {
				errs = append(errs, err)
			}
			done = false
			continue
		}
		if st == removeSent && d.goneNow(ctx, id, e.Version) {
			st = removeGone
		}
		if st != removeGone {
			done = false
		}
	}
	return done, errors.Join(errs...)
}

// goneNow asks the API server, through the uncached reader when there is
// one, whether an object is gone.
func (d *Direct) goneNow(ctx context.Context, id canon.ObjectID, version string) bool {
	if d.apiReader == nil {
		return false
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(id.GroupVersionKind(version))
	err := d.apiReader.Get(ctx, client.ObjectKey{Namespace: id.Namespace, Name: id.Name}, obj)
	return apierrors.IsNotFound(err)
}
