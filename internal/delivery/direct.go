package delivery

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	"github.com/apiaryhq/apiary/internal/adopt"
	"github.com/apiaryhq/apiary/internal/delivery/canon"
)

// DefaultFieldManager is the server-side apply field manager of the direct sink.
const DefaultFieldManager = "apiary"

// DirectOptions configure the direct sink.
type DirectOptions struct {
	// FieldManager is the server-side apply field manager; DefaultFieldManager
	// when empty.
	FieldManager string
	// Scheme decides which kinds are read as typed objects (and so through
	// the same informers as the rest of the manager); the client's scheme
	// when nil.
	Scheme *runtime.Scheme
	// AdoptFrom are the field managers of client-side writers whose fields
	// the sink takes over (takeOver in adopt.go) on objects it did not
	// deliver, e.g. the exalsius operator's "manager". Needs the apiReader.
	AdoptFrom []string
}

// Direct is the sink that applies objects to the cluster with server-side
// apply. It is safe for concurrent use by several owners.
type Direct struct {
	client       client.Client
	apiReader    client.Reader
	scheme       *runtime.Scheme
	mapper       meta.RESTMapper
	fieldManager string
	adoption     adopt.Migration
}

var _ Sink = (*Direct)(nil)

// NewDirect returns a direct sink. c should be the manager's cached client:
// live objects are read from its informer cache, so steady state makes no
// API request. Kinds registered in the scheme are read as typed objects, so
// they share the manager's typed informers; other kinds are read as
// unstructured objects, which the client serves from the API server unless
// it caches unstructured objects. apiReader, optional, is an uncached reader
// used to confirm at once that a deleted object is gone.
func NewDirect(c client.Client, apiReader client.Reader, opts DirectOptions) *Direct {
	d := &Direct{client: c, apiReader: apiReader, scheme: opts.Scheme, fieldManager: opts.FieldManager}
	if d.scheme == nil {
		d.scheme = c.Scheme()
	}
	if d.fieldManager == "" {
		d.fieldManager = DefaultFieldManager
	}
	d.adoption = adopt.Migration{From: opts.AdoptFrom, To: d.fieldManager}
	d.mapper = remembering(c.RESTMapper())
	return d
}

// Mode returns ModeDirect.
func (d *Direct) Mode() string { return ModeDirect }

// item is one desired object, ready to apply.
type item struct {
	id     canon.ObjectID
	gvk    schema.GroupVersionKind
	obj    *unstructured.Unstructured // with owner labels and digest annotation
	digest string
	// deferred: the live object was left as another writer made it.
	deferred bool
}

// Apply makes the cluster hold exactly objs for owner. An object is applied
// (server-side, forcing ownership of its fields) unless the live object in
// the cache carries the same applied digest and already has every field of
// the desired object, or its adoption is deferred (Direct.deferred). Objects
// of prev that left the set are deleted when they still belong to owner
// (ownsLive). Errors of single objects are joined; the other
// objects are still applied, and the returned inventory keeps prev's entries
// of objects that failed.
func (d *Direct) Apply(ctx context.Context, owner Owner, objs []*unstructured.Unstructured, prev *commonv1.ResourceInventory) (*Result, error) {
	if err := owner.Validate(); err != nil {
		return nil, err
	}
	var errs []error
	prevByID := map[string]commonv1.ResourceRef{}
	if prev != nil {
		for _, e := range prev.Entries {
			prevByID[e.ID] = e
		}
	}
	// inSet holds every ID named by objs, also of objects that fail, so that
	// a failing object is never pruned. canPrune turns false when an object
	// names no ID at all.
	inSet := map[string]bool{}
	canPrune := true
	var items []*item
	scopes := map[schema.GroupVersionKind]bool{} // cluster-scoped kinds, per Apply
	for i, o := range objs {
		if err := checkIdentity(i, o); err != nil {
			errs, canPrune = append(errs, err), false
			continue
		}
		raw := canon.IDOf(o).String()
		it, err := d.prepare(owner, o, scopes)
		if err != nil {
			inSet[raw] = true
			errs = append(errs, err)
			continue
		}
		id := it.id.String()
		if inSet[id] {
			errs = append(errs, fmt.Errorf("%s: listed twice in the set", it.id.Describe()))
			continue
		}
		inSet[raw], inSet[id] = true, true
		items = append(items, it)
	}
	sort.SliceStable(items, func(i, j int) bool { return applyRank(items[i].gvk) < applyRank(items[j].gvk) })

	var entries []commonv1.ResourceRef
	var changed []string
	applied := map[string]bool{}
	digests := map[string]string{}
	for _, it := range items {
		if ctx.Err() != nil {
			break
		}
		id := it.id.String()
		wrote, err := d.applyOne(ctx, owner, it)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		applied[id] = true
		if !it.deferred {
			digests[id] = it.digest
		}
		entries = append(entries, commonv1.ResourceRef{ID: id, Version: it.gvk.Version})
		if wrote {
			changed = append(changed, id)
		}
	}
	// Keep prev's entries of objects of the set that were not applied, so
	// that they are not forgotten.
	for id := range inSet {
		if e, ok := prevByID[id]; ok && !applied[id] {
			entries = append(entries, e)
		}
	}
	stale := d.staleEntries(prev, inSet)
	switch {
	case ctx.Err() != nil:
		errs = append(errs, fmt.Errorf("delivering for %s: %w", owner, ctx.Err()))
		stale, entries = nil, append(entries, stale...)
	case !canPrune && len(stale) > 0:
		errs = append(errs, fmt.Errorf("pruning of %d objects skipped because an object of the set has no kind or no name", len(stale)))
		stale, entries = nil, append(entries, stale...)
	}
	for _, e := range stale {
		pruned, keep, err := d.prune(ctx, owner, e)
		if err != nil {
			errs = append(errs, err)
		}
		if keep {
			entries = append(entries, e)
		}
		if pruned {
			changed = append(changed, e.ID)
		}
	}
	canon.SortEntries(entries)
	sort.Strings(changed)
	return &Result{Inventory: &commonv1.ResourceInventory{Entries: entries}, Changed: changed, Digests: digests}, errors.Join(errs...)
}

// staleEntries returns prev's entries not in the set, in prune order: other
// kinds first, then CRDs, then namespaces.
func (d *Direct) staleEntries(prev *commonv1.ResourceInventory, inSet map[string]bool) []commonv1.ResourceRef {
	if prev == nil {
		return nil
	}
	var stale []commonv1.ResourceRef
	for _, e := range prev.Entries {
		if !inSet[e.ID] {
			stale = append(stale, e)
		}
	}
	sort.SliceStable(stale, func(i, j int) bool { return refRank(stale[i]) > refRank(stale[j]) })
	return stale
}

// prepare turns a desired object into an item (see prepareItem).
func (d *Direct) prepare(owner Owner, o *unstructured.Unstructured, scopes map[schema.GroupVersionKind]bool) (*item, error) {
	return prepareItem(d.mapper, owner, o, scopes, false)
}

// prepareItem turns a desired object into an item: canonical form (without
// owner references when dropOwnerRefs), namespace fixed by the object's
// scope, digest, owner labels and digest annotation. scopes remembers the
// scope of each kind seen so far.
func prepareItem(mapper meta.RESTMapper, owner Owner, o *unstructured.Unstructured, scopes map[schema.GroupVersionKind]bool, dropOwnerRefs bool) (*item, error) {
	gvk := o.GroupVersionKind()
	name := canon.Describe(gvk.Kind, o.GetNamespace(), o.GetName())
	if gvk.Version == "" {
		return nil, fmt.Errorf("%s: apiVersion is missing", name)
	}
	obj, err := canon.Canonical(o)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if dropOwnerRefs {
		unstructured.RemoveNestedField(obj.Object, "metadata", "ownerReferences")
	}
	clusterScoped, known := scopes[gvk]
	if !known {
		mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return nil, fmt.Errorf("%s: finding the resource of %s: %w", name, gvk, err)
		}
		clusterScoped = mapping.Scope.Name() == meta.RESTScopeNameRoot
		scopes[gvk] = clusterScoped
	}
	if clusterScoped {
		obj.SetNamespace("")
	} else if obj.GetNamespace() == "" {
		return nil, fmt.Errorf("%s: a namespaced object needs a namespace", name)
	}
	digest, err := canon.DigestOf(obj.Object)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	for k, v := range owner.Labels {
		labels[k] = v
	}
	for k, v := range owner.OwnerLabels() {
		labels[k] = v
	}
	obj.SetLabels(labels)
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[AnnotationAppliedDigest] = digest
	obj.SetAnnotations(ann)
	return &item{id: canon.IDOf(obj), gvk: gvk, obj: obj, digest: digest}, nil
}

// applyOne applies one object unless the live object already matches it,
// and reports whether the API server's object changed.
func (d *Direct) applyOne(ctx context.Context, owner Owner, it *item) (bool, error) {
	name := it.id.Describe()
	live, err := d.getLive(ctx, it.gvk, client.ObjectKeyFromObject(it.obj))
	if err != nil {
		return false, fmt.Errorf("%s: reading the live object: %w", name, err)
	}
	if live != nil {
		other := owner.heldByOther(live.GetLabels())
		if other == "" {
			other = owner.referencedByOther(live)
		}
		if other != "" {
			return false, &HeldByOtherError{Object: name, Holder: other, Owner: owner.String()}
		}
		if live.GetAnnotations()[AnnotationAppliedDigest] == it.digest {
			m, err := d.toMap(live)
			if err != nil {
				return false, fmt.Errorf("%s: reading the live object: %w", name, err)
			}
			want := it.obj.Object
			if canon.IsSecret(it.gvk) && !canon.HasData(m) {
				// The manager caches Secrets without their data: the
				// applied-digest annotation, which covers it, stands for it.
				want = canon.WithoutData(want)
			}
			if d.holds(it.gvk, want, m) {
				return false, nil
			}
		}
		deferred, err := d.deferred(owner, it, live)
		if err != nil {
			return false, fmt.Errorf("%s: %w", name, err)
		}
		if deferred {
			it.deferred = true
			log.FromContext(ctx).V(1).Info("left an object another controller wrote unwritten until it changes",
				"object", name, "owner", owner.String())
			return false, nil
		}
	}
	if adopted, err := d.takeOver(ctx, it, live); err != nil || adopted {
		if err != nil {
			return false, fmt.Errorf("%s: %w", name, err)
		}
		return true, nil
	}
	obj := it.obj.DeepCopy()
	err = d.client.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj),
		client.ForceOwnership, client.FieldOwner(d.fieldManager))
	if err != nil {
		return false, fmt.Errorf("%s: applying: %w", name, err)
	}
	log.FromContext(ctx).V(1).Info("applied object", "object", name, "owner", owner.String())
	return live == nil || obj.GetResourceVersion() != live.GetResourceVersion(), nil
}

// getLive reads an object through the client; nil when it does not exist.
func (d *Direct) getLive(ctx context.Context, gvk schema.GroupVersionKind, key client.ObjectKey) (client.Object, error) {
	return readLive(ctx, d.client, d.scheme, gvk, key)
}

// readLive reads an object; nil when it does not exist. Kinds of the scheme
// are read as typed objects, because reading them as unstructured objects
// through a cache would start a second informer.
func readLive(ctx context.Context, c client.Reader, scheme *runtime.Scheme, gvk schema.GroupVersionKind, key client.ObjectKey) (client.Object, error) {
	var obj client.Object
	if scheme != nil && scheme.Recognizes(gvk) {
		if typed, err := scheme.New(gvk); err == nil {
			obj, _ = typed.(client.Object)
		}
	}
	if obj == nil {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		obj = u
	}
	if err := c.Get(ctx, key, obj); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj, nil
}

// toMap returns the content of a live object read by getLive, without its
// managed fields, which are never compared.
func (d *Direct) toMap(obj client.Object) (map[string]any, error) {
	obj.SetManagedFields(nil) // obj is the caller's copy
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.Object, nil
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("converting: %w", err)
	}
	return m, nil
}

// applyRank orders kinds for applying: namespaces, then CRDs, then the rest.
func applyRank(gvk schema.GroupVersionKind) int {
	switch {
	case gvk.Group == "" && gvk.Kind == "Namespace":
		return 0
	case gvk.Group == "apiextensions.k8s.io" && gvk.Kind == "CustomResourceDefinition":
		return 1
	}
	return 2
}

func refRank(e commonv1.ResourceRef) int {
	id, err := canon.ParseID(e.ID)
	if err != nil {
		return 2
	}
	return applyRank(id.GroupVersionKind(e.Version))
}
