package manager

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

var undecodableObjects = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "apiary_cache_undecodable_objects_total",
	Help: "Objects of Apiary's kinds the cache kept out because they cannot be decoded, by kind.",
}, []string{"kind"})

func init() { ctrlmetrics.Registry.MustRegister(undecodableObjects) }

// quarantine lists and watches Apiary's own kinds item by item, so that one
// object that does not decode is kept out of the cache instead of failing
// the list (and with it the informer of the whole kind, for every tenant).
//
// controller-runtime's typed informer decodes a list as one document: one
// item whose value its Go type cannot parse (spec.lifecycle.lifetime:
// banana, stored before the CRD refused it) fails every list and watch of
// the kind. The quarantine's informers read the kind as unstructured
// objects instead and decode each item with the manager's scheme; an item
// that does not decode is left out of the typed cache (no reconcile ever
// sees a half-decoded spec), logged, counted in
// apiary_cache_undecodable_objects_total, and given a Warning event and a
// Stalled=True condition (reason Undecodable) naming the error, written
// beside its spec, never over it. It is decoded again on its next change.
type quarantine struct {
	cfg     *rest.Config
	scheme  *runtime.Scheme
	decoder runtime.Decoder
	log     logr.Logger

	once   sync.Once
	dyn    dynamic.Interface
	mapper meta.RESTMapper
	err    error

	mu       sync.Mutex
	writer   client.Client
	recorder events.EventRecorder
	reported map[types.UID]string // the resourceVersion reported
}

// quarantinedGroups are the API groups whose kinds the quarantine reads.
var quarantinedGroups = map[string]bool{
	workspacesv1.GroupVersion.Group:  true,
	infrav1.GroupVersion.Group:       true,
	quotav1alpha1.GroupVersion.Group: true,
}

func newQuarantine(cfg *rest.Config, scheme *runtime.Scheme, log logr.Logger) *quarantine {
	return &quarantine{
		cfg:      cfg,
		scheme:   scheme,
		decoder:  serializer.NewCodecFactory(scheme).UniversalDeserializer(),
		log:      log.WithName("quarantine"),
		reported: map[types.UID]string{},
	}
}

// report makes the quarantine write events and conditions: until it is
// called, undecodable objects are only logged and counted.
func (q *quarantine) report(c client.Client, r events.EventRecorder) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.writer, q.recorder = c, r
}

// newInformer is the cache's NewInformer: Apiary's kinds get the
// quarantine's ListerWatcher; every other kind the one it was given.
func (q *quarantine) newInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
	return q.newInformerWith(nil)(lw, obj, resync, idx)
}

// newInformerWith is newInformer for a cache that selects some kinds by
// label (a shard's, splitcache.go): the informers of those kinds list and
// watch what selectors[gvk] selects. The selectors are applied here rather
// than in the cache's options, which would need every kind's REST mapping
// when the cache is built, before k0rdent's CRDs may be installed.
func (q *quarantine) newInformerWith(selectors map[schema.GroupVersionKind]labels.Selector) func(toolscache.ListerWatcher,
	runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer {
	return func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
		if gvk, ok := q.kindOf(obj); ok {
			lw = q.listWatch(gvk, selectors[gvk])
		} else if gvk, err := apiutil.GVKForObject(obj, q.scheme); err == nil && selectors[gvk] != nil {
			lw = withSelector(lw, selectors[gvk])
		}
		return toolscache.NewSharedIndexInformer(lw, obj, resync, idx)
	}
}

// withSelector lists and watches through lw what sel selects.
func withSelector(lw toolscache.ListerWatcher, sel labels.Selector) toolscache.ListerWatcher {
	c := toolscache.ToListerWatcherWithContext(lw)
	return &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.LabelSelector = sel.String()
			return c.ListWithContext(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.LabelSelector = sel.String()
			return c.WatchWithContext(ctx, opts)
		},
	}
}

// kindOf is obj's kind when it is a typed object of a quarantined group.
func (q *quarantine) kindOf(obj runtime.Object) (schema.GroupVersionKind, bool) {
	switch obj.(type) {
	case runtime.Unstructured, *metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList:
		return schema.GroupVersionKind{}, false
	}
	gvk, err := apiutil.GVKForObject(obj, q.scheme)
	if err != nil || !quarantinedGroups[gvk.Group] {
		return schema.GroupVersionKind{}, false
	}
	return gvk, true
}

func (q *quarantine) clients() (dynamic.Interface, meta.RESTMapper, error) {
	q.once.Do(func() {
		hc, err := rest.HTTPClientFor(q.cfg)
		if err != nil {
			q.err = err
			return
		}
		cfg := rest.CopyConfig(q.cfg)
		cfg.NegotiatedSerializer = nil
		if q.dyn, q.err = dynamic.NewForConfigAndClient(cfg, hc); q.err != nil {
			return
		}
		q.mapper, q.err = apiutil.NewDynamicRESTMapper(q.cfg, hc)
	})
	return q.dyn, q.mapper, q.err
}

func (q *quarantine) resource(gvk schema.GroupVersionKind) (dynamic.NamespaceableResourceInterface, error) {
	dyn, mapper, err := q.clients()
	if err != nil {
		return nil, fmt.Errorf("creating the quarantine's clients: %w", err)
	}
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, fmt.Errorf("mapping %s: %w", gvk, err)
	}
	return dyn.Resource(m.Resource), nil
}

// listWatch lists and watches gvk in every namespace (the manager's cache
// has no namespace restriction for Apiary's kinds), the objects sel selects
// when not nil (a shard's workspaces).
func (q *quarantine) listWatch(gvk schema.GroupVersionKind, sel labels.Selector) *toolscache.ListWatch {
	return &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			if sel != nil {
				opts.LabelSelector = sel.String()
			}
			res, err := q.resource(gvk)
			if err != nil {
				return nil, err
			}
			ul, err := res.List(ctx, opts)
			if err != nil {
				return nil, err
			}
			return q.typedList(ctx, gvk, ul)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			if sel != nil {
				opts.LabelSelector = sel.String()
			}
			res, err := q.resource(gvk)
			if err != nil {
				return nil, err
			}
			w, err := res.Watch(ctx, opts)
			if err != nil {
				return nil, err
			}
			return watch.Filter(w, func(e watch.Event) (watch.Event, bool) { return q.typedEvent(ctx, gvk, e) }), nil
		},
	}
}

func (q *quarantine) typedList(ctx context.Context, gvk schema.GroupVersionKind, ul *unstructured.UnstructuredList) (runtime.Object, error) {
	list, err := q.newObject(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err != nil {
		return nil, err
	}
	items := make([]runtime.Object, 0, len(ul.Items))
	for i := range ul.Items {
		if obj, ok := q.decode(ctx, gvk, &ul.Items[i]); ok {
			items = append(items, obj)
		}
	}
	if err := meta.SetList(list, items); err != nil {
		return nil, fmt.Errorf("building the %s list: %w", gvk.Kind, err)
	}
	la, err := meta.ListAccessor(list)
	if err != nil {
		return nil, err
	}
	la.SetResourceVersion(ul.GetResourceVersion())
	la.SetContinue(ul.GetContinue())
	la.SetRemainingItemCount(ul.GetRemainingItemCount())
	return list, nil
}

func (q *quarantine) newObject(gvk schema.GroupVersionKind) (runtime.Object, error) {
	obj, _, err := q.decoder.Decode([]byte(fmt.Sprintf(`{"apiVersion":%q,"kind":%q}`, gvk.GroupVersion(), gvk.Kind)), nil, nil)
	if err != nil {
		return nil, fmt.Errorf("creating a %s: %w", gvk, err)
	}
	return obj, nil
}

// typedEvent decodes a watch event's object; an undecodable object's
// event is dropped, but for its deletion, passed on with its metadata only.
func (q *quarantine) typedEvent(ctx context.Context, gvk schema.GroupVersionKind, e watch.Event) (watch.Event, bool) {
	u, ok := e.Object.(*unstructured.Unstructured)
	if !ok || e.Type == watch.Error {
		return e, true
	}
	if e.Type == watch.Deleted {
		if obj, err := q.decodeRaw(u); err == nil {
			return watch.Event{Type: e.Type, Object: obj}, true
		}
		obj, err := q.metadataOnly(gvk, u)
		if err != nil {
			return e, false
		}
		return watch.Event{Type: e.Type, Object: obj}, true
	}
	obj, ok := q.decode(ctx, gvk, u)
	if !ok {
		return e, false
	}
	return watch.Event{Type: e.Type, Object: obj}, true
}

// metadataOnly is a typed object with u's metadata and nothing else: the
// cache needs no more to forget an object.
func (q *quarantine) metadataOnly(gvk schema.GroupVersionKind, u *unstructured.Unstructured) (runtime.Object, error) {
	obj, err := q.newObject(gvk)
	if err != nil {
		return nil, err
	}
	mo, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	mo.SetName(u.GetName())
	mo.SetNamespace(u.GetNamespace())
	mo.SetUID(u.GetUID())
	mo.SetResourceVersion(u.GetResourceVersion())
	return obj, nil
}

func (q *quarantine) decodeRaw(u *unstructured.Unstructured) (runtime.Object, error) {
	raw, err := json.Marshal(u.Object)
	if err != nil {
		return nil, err
	}
	obj, _, err := q.decoder.Decode(raw, nil, nil)
	if err != nil {
		return nil, err
	}
	if _, isU := obj.(runtime.Unstructured); isU {
		return nil, fmt.Errorf("%s is not a kind of Apiary's scheme", u.GroupVersionKind())
	}
	// As the typed client leaves it: the cache sets the kind where needed.
	obj.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return obj, nil
}

// decode is u as a typed object, or false (and a report) when it cannot be.
func (q *quarantine) decode(ctx context.Context, gvk schema.GroupVersionKind, u *unstructured.Unstructured) (runtime.Object, bool) {
	obj, err := q.decodeRaw(u)
	if err == nil {
		return obj, true
	}
	undecodableObjects.WithLabelValues(gvk.Kind).Inc()
	q.log.Error(err, "object cannot be decoded: kept out of the cache until it changes", "kind", gvk.Kind,
		"namespace", u.GetNamespace(), "name", u.GetName(), "resourceVersion", u.GetResourceVersion())
	q.mu.Lock()
	writer, recorder := q.writer, q.recorder
	fresh := q.reported[u.GetUID()] != u.GetResourceVersion()
	if writer != nil && fresh {
		q.reported[u.GetUID()] = u.GetResourceVersion()
	}
	q.mu.Unlock()
	if writer != nil && fresh {
		// Off the watch: the report writes to the API server.
		go q.stall(context.WithoutCancel(ctx), writer, recorder, u.DeepCopy(), err)
	}
	return nil, false
}

// stall gives the undecodable object a Warning event and Stalled=True,
// Ready=False conditions; its spec and other conditions are kept.
func (q *quarantine) stall(ctx context.Context, c client.Client, r events.EventRecorder, u *unstructured.Unstructured, cause error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	msg := fmt.Sprintf("Apiary cannot decode this object, so it does not act on it: %v; correct the field (the CRD refuses such values now)", cause)
	if len(msg) > 1024 {
		msg = msg[:1024]
	}
	if r != nil {
		r.Eventf(u, nil, corev1.EventTypeWarning, commonv1.UndecodableReason, "Decode", "%s", msg)
	}
	now := metav1.Now().UTC().Format(time.RFC3339)
	conds := []any{}
	existing, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range existing {
		if m, ok := c.(map[string]any); ok && (m["type"] == commonv1.StalledCondition || m["type"] == commonv1.ReadyCondition) {
			continue
		}
		conds = append(conds, c)
	}
	for _, t := range []struct{ typ, status string }{{commonv1.ReadyCondition, "False"}, {commonv1.StalledCondition, "True"}} {
		conds = append(conds, map[string]any{"type": t.typ, "status": t.status, "reason": commonv1.UndecodableReason,
			"message": msg, "lastTransitionTime": now, "observedGeneration": u.GetGeneration()})
	}
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": conds}})
	if err == nil {
		err = c.Status().Patch(ctx, u, client.RawPatch(types.MergePatchType, patch))
	}
	if err != nil {
		q.log.Error(err, "reporting an undecodable object", "kind", u.GetKind(), "namespace", u.GetNamespace(), "name", u.GetName())
	}
}
