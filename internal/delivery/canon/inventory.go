package canon

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
)

// ObjectID identifies an object independently of its API version, as an
// inventory entry does.
type ObjectID struct {
	// Namespace of the object; empty for a cluster-scoped object.
	Namespace string
	// Name of the object.
	Name string
	// Group is the API group of the object; empty for the core group.
	Group string
	// Kind of the object.
	Kind string
}

// String returns the inventory ID "<namespace>_<name>_<group>_<kind>".
func (id ObjectID) String() string {
	return id.Namespace + "_" + id.Name + "_" + id.Group + "_" + id.Kind
}

// GroupVersionKind returns the object's kind in the given API version.
func (id ObjectID) GroupVersionKind(version string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: id.Group, Version: version, Kind: id.Kind}
}

// Describe names the object as "Kind namespace/name" for messages.
func (id ObjectID) Describe() string { return Describe(id.Kind, id.Namespace, id.Name) }

// IDOf returns the ID of an object, taken from its apiVersion, kind,
// namespace and name as they are.
func IDOf(obj *unstructured.Unstructured) ObjectID {
	gvk := obj.GroupVersionKind()
	return ObjectID{Namespace: obj.GetNamespace(), Name: obj.GetName(), Group: gvk.Group, Kind: gvk.Kind}
}

// ParseID parses an inventory ID "<namespace>_<name>_<group>_<kind>". The
// name and kind must not be empty; no part may contain "_".
func ParseID(id string) (ObjectID, error) {
	parts := strings.Split(id, "_")
	if len(parts) != 4 {
		return ObjectID{}, fmt.Errorf("inventory ID %q: want <namespace>_<name>_<group>_<kind>", id)
	}
	out := ObjectID{Namespace: parts[0], Name: parts[1], Group: parts[2], Kind: parts[3]}
	if out.Name == "" || out.Kind == "" {
		return ObjectID{}, fmt.Errorf("inventory ID %q: name and kind must not be empty", id)
	}
	return out, nil
}

// NewInventory returns the inventory of objs: one entry per ID, sorted by ID,
// with the version of the last object of that ID. Objects without a kind or
// a name are left out.
func NewInventory(objs []*unstructured.Unstructured) *commonv1.ResourceInventory {
	byID := make(map[string]string, len(objs))
	for _, o := range objs {
		if o == nil || o.GetKind() == "" || o.GetName() == "" {
			continue
		}
		byID[IDOf(o).String()] = o.GroupVersionKind().Version
	}
	inv := &commonv1.ResourceInventory{}
	for id, v := range byID {
		inv.Entries = append(inv.Entries, commonv1.ResourceRef{ID: id, Version: v})
	}
	SortEntries(inv.Entries)
	return inv
}

// Diff returns the entries of prev whose ID is not in next, sorted by ID:
// the objects that left the set. A change of version alone is not a
// difference. Either inventory may be nil.
func Diff(prev, next *commonv1.ResourceInventory) []commonv1.ResourceRef {
	if prev == nil {
		return nil
	}
	keep := map[string]bool{}
	if next != nil {
		for _, e := range next.Entries {
			keep[e.ID] = true
		}
	}
	var stale []commonv1.ResourceRef
	for _, e := range prev.Entries {
		if !keep[e.ID] {
			stale = append(stale, e)
		}
	}
	SortEntries(stale)
	return stale
}

// UnionInventory returns the entries of a and b, sorted by ID; an entry
// of both is taken from a.
func UnionInventory(a, b *commonv1.ResourceInventory) *commonv1.ResourceInventory {
	seen := map[string]commonv1.ResourceRef{}
	for _, inv := range []*commonv1.ResourceInventory{a, b} {
		if inv == nil {
			continue
		}
		for _, e := range inv.Entries {
			if _, ok := seen[e.ID]; !ok {
				seen[e.ID] = e
			}
		}
	}
	out := &commonv1.ResourceInventory{Entries: make([]commonv1.ResourceRef, 0, len(seen))}
	for _, e := range seen {
		out.Entries = append(out.Entries, e)
	}
	SortEntries(out.Entries)
	return out
}

// SortEntries sorts inventory entries by ID.
func SortEntries(e []commonv1.ResourceRef) {
	sort.Slice(e, func(i, j int) bool { return e[i].ID < e[j].ID })
}

// Describe names an object as "Kind namespace/name" for messages.
func Describe(kind, namespace, name string) string {
	if namespace == "" {
		return fmt.Sprintf("%s %s", kind, name)
	}
	return fmt.Sprintf("%s %s/%s", kind, namespace, name)
}
