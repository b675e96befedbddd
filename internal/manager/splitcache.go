package manager

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/apiaryhq/apiary/internal/metrics"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/shard"
)

// splitKinds are the kinds a shard caches by bucket: the workspaces, and
// the ServiceSets and Secrets Apiary delivers for them, which carry
// shard.BucketLabel. They are most of what the cache holds; every other
// kind (Colonies, ClusterDeployments, WorkspaceClasses, TenantQuotas,
// Leases) stays fully cached.
func splitKinds() []client.Object {
	return []client.Object{&workspacesv1.WorkspaceDeployment{}, &k0rdentv1beta1.ServiceSet{}, &corev1.Secret{}}
}

// splitCache is the cache of a shard. The split kinds are cached by two
// informers each: the objects whose bucket the shard desires (own), and
// those without a valid bucket (unbucketed: new workspaces, which the
// shard desiring their unit labels, Secrets Apiary did not write, and
// anything whose label a tenant broke). Reads of a split kind look in
// both; informers of a split kind pass both informers' events. A shard
// never acts on a unit it does not desire (shard.Decide: a holder that no
// longer desires a unit only drains and releases it), so it needs no other
// bucket's objects.
type splitCache struct {
	// own caches everything, the split kinds of the shard's buckets only.
	cache.Cache
	// unbucketed caches the split kinds without a valid bucket.
	unbucketed cache.Cache
	split      map[schema.GroupKind]bool
	scheme     *runtime.Scheme
}

// newShardCache is the manager's NewCache for shard c: q reads Apiary's
// kinds (the quarantine applies their selectors itself).
func newShardCache(c shard.Config, q *quarantine) cache.NewCacheFunc {
	return func(cfg *rest.Config, opts cache.Options) (cache.Cache, error) {
		own, unbucketed := opts, opts
		// The unbucketed cache has the options of the split kinds only (the
		// Secrets' transform); the selectors are the informers' (quarantine).
		unbucketed.ByObject = map[client.Object]cache.ByObject{}
		split := map[schema.GroupKind]bool{}
		ownSel, unbucketedSel := map[schema.GroupVersionKind]labels.Selector{}, map[schema.GroupVersionKind]labels.Selector{}
		for _, obj := range splitKinds() {
			gvk, err := apiutil.GVKForObject(obj, opts.Scheme)
			if err != nil {
				return nil, fmt.Errorf("splitting the cache: %w", err)
			}
			split[gvk.GroupKind()] = true
			ownSel[gvk], unbucketedSel[gvk] = c.OwnSelector(), shard.UnbucketedSelector()
			for o, by := range opts.ByObject {
				if g, err := apiutil.GVKForObject(o, opts.Scheme); err == nil && g == gvk {
					unbucketed.ByObject[o] = by
				}
			}
		}
		unbucketed.DefaultTransform = summarizeWorkspaces(opts.DefaultTransform)
		own.NewInformer, unbucketed.NewInformer = q.newInformerWith(ownSel), q.newInformerWith(unbucketedSel)
		ownCache, err := cache.New(cfg, own)
		if err != nil {
			return nil, err
		}
		unbucketedCache, err := cache.New(cfg, unbucketed)
		if err != nil {
			return nil, err
		}
		sc := &splitCache{Cache: ownCache, unbucketed: unbucketedCache, split: split, scheme: opts.Scheme}
		registerCachedObjects(sc)
		return sc, nil
	}
}

// summarizeWorkspaces is the transform of the unbucketed cache: its
// workspaces are kept as a summary — metadata, the cluster and the class
// they name — since no shard acts on a workspace without a valid bucket
// (the workspace controller only labels it, and acts once the label brings
// the whole object into the own informer). Every shard caches the new
// workspaces until they are labelled: as summaries, a rollout of thousands
// costs each shard little. Other objects get next.
func summarizeWorkspaces(next toolscache.TransformFunc) toolscache.TransformFunc {
	return func(in any) (any, error) {
		w, ok := in.(*workspacesv1.WorkspaceDeployment)
		if !ok {
			if next == nil {
				return in, nil
			}
			return next(in)
		}
		out := &workspacesv1.WorkspaceDeployment{TypeMeta: w.TypeMeta, ObjectMeta: w.ObjectMeta}
		out.ManagedFields = nil
		out.Spec.ClusterDeploymentRef = w.Spec.ClusterDeploymentRef
		out.Spec.WorkspaceClassRef = w.Spec.WorkspaceClassRef
		return out, nil
	}
}

// isSplit reports whether obj (an object or a list) is of a split kind.
func (c *splitCache) isSplit(obj runtime.Object) bool {
	gvk, err := apiutil.GVKForObject(obj, c.scheme)
	if err != nil {
		return false
	}
	gk := gvk.GroupKind()
	if _, isList := obj.(client.ObjectList); isList && len(gk.Kind) > 4 && gk.Kind[len(gk.Kind)-4:] == "List" {
		gk.Kind = gk.Kind[:len(gk.Kind)-4]
	}
	return c.split[gk]
}

// Get reads a split kind from the own informer, then the unbucketed one.
func (c *splitCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := c.Cache.Get(ctx, key, obj, opts...)
	if !c.isSplit(obj) || !apierrors.IsNotFound(err) {
		return err
	}
	return c.unbucketed.Get(ctx, key, obj, opts...)
}

// List lists a split kind from both informers. An object moving between
// them may be in both for a moment: the own informer's copy is kept.
func (c *splitCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.Cache.List(ctx, list, opts...); err != nil || !c.isSplit(list) {
		return err
	}
	more := list.DeepCopyObject().(client.ObjectList)
	if err := c.unbucketed.List(ctx, more, opts...); err != nil {
		return err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return fmt.Errorf("merging the lists of a split cache: %w", err)
	}
	extra, err := meta.ExtractList(more)
	if err != nil || len(extra) == 0 {
		return err
	}
	seen := make(map[client.ObjectKey]bool, len(items))
	for _, o := range items {
		if m, ok := o.(client.Object); ok {
			seen[client.ObjectKeyFromObject(m)] = true
		}
	}
	for _, o := range extra {
		if m, ok := o.(client.Object); ok && seen[client.ObjectKeyFromObject(m)] {
			continue
		}
		items = append(items, o)
	}
	return meta.SetList(list, items)
}

// GetInformer of a split kind passes both informers' events.
func (c *splitCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	a, err := c.Cache.GetInformer(ctx, obj, opts...)
	if err != nil || !c.isSplit(obj) {
		return a, err
	}
	b, err := c.unbucketed.GetInformer(ctx, obj, opts...)
	if err != nil {
		return nil, err
	}
	return &pairInformer{a: a, b: b}, nil
}

// GetInformerForKind is GetInformer by kind.
func (c *splitCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	a, err := c.Cache.GetInformerForKind(ctx, gvk, opts...)
	if err != nil || !c.split[gvk.GroupKind()] {
		return a, err
	}
	b, err := c.unbucketed.GetInformerForKind(ctx, gvk, opts...)
	if err != nil {
		return nil, err
	}
	return &pairInformer{a: a, b: b}, nil
}

// RemoveInformer removes both informers of a split kind.
func (c *splitCache) RemoveInformer(ctx context.Context, obj client.Object) error {
	if err := c.Cache.RemoveInformer(ctx, obj); err != nil || !c.isSplit(obj) {
		return err
	}
	return c.unbucketed.RemoveInformer(ctx, obj)
}

// IndexField indexes both informers of a split kind.
func (c *splitCache) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	if err := c.Cache.IndexField(ctx, obj, field, extract); err != nil || !c.isSplit(obj) {
		return err
	}
	return c.unbucketed.IndexField(ctx, obj, field, extract)
}

// Start runs both caches until ctx ends.
func (c *splitCache) Start(ctx context.Context) error {
	errs := make(chan error, 1)
	go func() { errs <- c.unbucketed.Start(ctx) }()
	if err := c.Cache.Start(ctx); err != nil {
		return err
	}
	return <-errs
}

// WaitForCacheSync waits for both caches.
func (c *splitCache) WaitForCacheSync(ctx context.Context) bool {
	return c.Cache.WaitForCacheSync(ctx) && c.unbucketed.WaitForCacheSync(ctx)
}

// pairInformer is the own and the unbucketed informer of a split kind.
type pairInformer struct{ a, b cache.Informer }

type pairRegistration struct {
	a, b toolscache.ResourceEventHandlerRegistration
}

func (r pairRegistration) HasSynced() bool { return r.a.HasSynced() && r.b.HasSynced() }

func (r pairRegistration) HasSyncedChecker() toolscache.DoneChecker {
	return bothDone("handler", r.a.HasSyncedChecker(), r.b.HasSyncedChecker())
}

func (p *pairInformer) add(f func(cache.Informer) (toolscache.ResourceEventHandlerRegistration, error)) (toolscache.ResourceEventHandlerRegistration, error) {
	a, err := f(p.a)
	if err != nil {
		return nil, err
	}
	b, err := f(p.b)
	if err != nil {
		_ = p.a.RemoveEventHandler(a)
		return nil, err
	}
	return pairRegistration{a: a, b: b}, nil
}

func (p *pairInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return p.add(func(i cache.Informer) (toolscache.ResourceEventHandlerRegistration, error) {
		return i.AddEventHandler(h)
	})
}

func (p *pairInformer) AddEventHandlerWithResyncPeriod(h toolscache.ResourceEventHandler, resync time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	return p.add(func(i cache.Informer) (toolscache.ResourceEventHandlerRegistration, error) {
		return i.AddEventHandlerWithResyncPeriod(h, resync)
	})
}

func (p *pairInformer) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, o toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	return p.add(func(i cache.Informer) (toolscache.ResourceEventHandlerRegistration, error) {
		return i.AddEventHandlerWithOptions(h, o)
	})
}

func (p *pairInformer) RemoveEventHandler(r toolscache.ResourceEventHandlerRegistration) error {
	pr, ok := r.(pairRegistration)
	if !ok {
		return fmt.Errorf("not a registration of a split informer: %T", r)
	}
	if err := p.a.RemoveEventHandler(pr.a); err != nil {
		return err
	}
	return p.b.RemoveEventHandler(pr.b)
}

func (p *pairInformer) AddIndexers(idx toolscache.Indexers) error {
	if err := p.a.AddIndexers(idx); err != nil {
		return err
	}
	return p.b.AddIndexers(idx)
}

func (p *pairInformer) HasSynced() bool { return p.a.HasSynced() && p.b.HasSynced() }

func (p *pairInformer) HasSyncedChecker() toolscache.DoneChecker {
	return bothDone("informer", p.a.HasSyncedChecker(), p.b.HasSyncedChecker())
}

func (p *pairInformer) IsStopped() bool { return p.a.IsStopped() || p.b.IsStopped() }

// bothDone is done once a and b are.
func bothDone(name string, a, b toolscache.DoneChecker) toolscache.DoneChecker {
	d := &doneChecker{name: name, done: make(chan struct{})}
	go func() {
		<-a.Done()
		<-b.Done()
		close(d.done)
	}()
	return d
}

type doneChecker struct {
	name string
	done chan struct{}
}

func (d *doneChecker) Name() string          { return "split " + d.name }
func (d *doneChecker) Done() <-chan struct{} { return d.done }

// cachedObjects is metrics.ShardCachedObjects, collected from the split
// cache.
var cachedObjects = metrics.ShardCachedObjects

type cachedObjectsCollector struct{ c *splitCache }

var registerOnce sync.Once

// registerCachedObjects registers apiary_shard_cached_objects for the
// first shard cache of the process (tests run one manager per process).
func registerCachedObjects(c *splitCache) {
	registerOnce.Do(func() { ctrlmetrics.Registry.MustRegister(cachedObjectsCollector{c: c}) })
}

func (cachedObjectsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- cachedObjects }

func (col cachedObjectsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx := context.Background()
	for _, obj := range splitKinds() {
		gvk, err := apiutil.GVKForObject(obj, col.c.scheme)
		if err != nil {
			continue
		}
		for name, c := range map[string]cache.Cache{"own": col.c.Cache, "unbucketed": col.c.unbucketed} {
			n, ok := storeSize(ctx, c, obj)
			if !ok {
				continue
			}
			ch <- prometheus.MustNewConstMetric(cachedObjects, prometheus.GaugeValue, float64(n), gvk.Kind, name)
		}
	}
}

// storeSize is the number of objects an informer holds, without copying
// them; not ok when the informer was never started.
func storeSize(ctx context.Context, c cache.Cache, obj client.Object) (int, bool) {
	inf, err := c.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return 0, false
	}
	s, ok := inf.(interface{ GetStore() toolscache.Store })
	if !ok {
		return 0, false
	}
	return len(s.GetStore().ListKeys()), true
}
