package delivery

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	"github.com/apiaryhq/apiary/internal/delivery/canon"
	"github.com/apiaryhq/apiary/internal/gitrepo"
)

// Delete queues the removal of the files of prev's objects that still
// belong to owner, and reports done once they are committed and Flux has
// pruned every object of prev from the cluster.
func (g *Git) Delete(ctx context.Context, owner Owner, prev *commonv1.ResourceInventory) (bool, error) {
	if err := owner.Validate(); err != nil {
		return false, err
	}
	unit := UnitOf(ctx)
	g.mu.Lock()
	key := keyOf(owner)
	if g.retired {
		g.mu.Unlock()
		return false, ErrRetired
	}
	if g.repo == nil {
		g.refused[key] = true
		g.mu.Unlock()
		return false, fmt.Errorf("%w: %w", ErrNotOpen, g.openErr)
	}
	for _, e := range prevEntries(prev) {
		g.queueRemoval(owner, e, unit)
	}
	if g.perOwner[key] > 0 {
		g.wake()
		err := g.ownerErr[key]
		g.mu.Unlock()
		return false, err
	}
	g.mu.Unlock()
	for _, e := range prevEntries(prev) {
		id, err := canon.ParseID(e.ID)
		if err != nil {
			continue
		}
		live, err := readLive(ctx, g.opts.Reader, g.opts.Scheme, id.GroupVersionKind(e.Version), client.ObjectKey{Namespace: id.Namespace, Name: id.Name})
		if meta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			return false, fmt.Errorf("%s: reading the live object: %w", id.Describe(), err)
		}
		if live != nil && owner.Owns(live.GetLabels()) {
			if _, err := g.pruneForgotten(ctx, owner, e.ID, live); err != nil {
				return false, err
			}
			return false, nil // Flux has not pruned it yet
		}
	}
	g.mu.Lock()
	delete(g.ownerRev, key)
	delete(g.ownerErr, key)
	g.mu.Unlock()
	return true, nil
}

// queueRemoval queues the removal of an entry's file when it still belongs
// to owner, and reports whether it did; the change is of the file's shard
// unit, else of unit. Callers hold g.mu.
func (g *Git) queueRemoval(owner Owner, e commonv1.ResourceRef, unit string) bool {
	path, ok := entryPath(e)
	if !ok {
		return false
	}
	cur := g.current(path)
	if cur == nil || !ownedBy(owner, cur) {
		return false
	}
	if u := fileUnit(cur); u != "" {
		unit = u
	}
	g.queue(path, nil, keyOf(owner), unit)
	return true
}

// removalPending reports whether the removal of an entry's file is queued
// for owner and not committed yet. Callers hold g.mu.
func (g *Git) removalPending(owner ownerKey, e commonv1.ResourceRef) bool {
	path, ok := entryPath(e)
	if !ok {
		return false
	}
	p, queued := g.pending[path]
	return queued && p.data == nil && p.owner == owner
}

// entryPath is the file of an inventory entry's object; false when the
// entry's ID cannot be parsed.
func entryPath(e commonv1.ResourceRef) (string, bool) {
	id, err := canon.ParseID(e.ID)
	if err != nil {
		return "", false
	}
	return gitrepo.ObjectPath(id.Namespace, id.Kind, id.Name), true
}
