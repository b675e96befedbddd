package childcluster

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// ClusterCache is a running informer cache of one child cluster, holding its
// Nodes, its Pods and its Gateways when an owner asked for them (each kind
// its own informer, one list and watch per cluster), trimmed by TrimNode,
// TrimPod and TrimGateway. Reads make no API request. It is shared: get it
// from Watch, and do not keep it past Release; once stopped, reads return
// ErrCacheStopped.
type ClusterCache struct {
	cluster types.NamespacedName
	hash    [sha256.Size]byte
	m       *Manager

	ctx    context.Context // ends when the cache stops
	cancel context.CancelFunc
	ready  chan struct{} // closed when the cache was launched, see startErr
	done   chan struct{} // closed when every goroutine of the cache ended

	startErr error // set before ready is closed
	// live is set once an informer synced (or, for Gateways, reached the
	// API server): from then on reachability changes are announced.
	live atomic.Bool

	mu       sync.Mutex
	stopped  bool
	cache    cache.Cache
	nodes    cache.Informer
	pods     cache.Informer
	gateways cache.Informer

	errMu sync.Mutex
	errs  map[Kind]error
	errCh chan struct{} // closed and replaced when an error is recorded
}

func newClusterCache(m *Manager, cd types.NamespacedName, hash [sha256.Size]byte) *ClusterCache {
	ctx, cancel := context.WithCancel(context.Background())
	return &ClusterCache{
		cluster: cd, hash: hash, m: m, ctx: ctx, cancel: cancel,
		ready: make(chan struct{}), done: make(chan struct{}),
		errs: map[Kind]error{}, errCh: make(chan struct{}),
	}
}

// Cluster is the ClusterDeployment whose child this cache reads.
func (c *ClusterCache) Cluster() types.NamespacedName { return c.cluster }

// ListNodes returns the child's Nodes (trimmed) from the cache, or
// ErrNodesNotWatched when no owner watches with Nodes.
func (c *ClusterCache) ListNodes(ctx context.Context) ([]corev1.Node, error) {
	ca, err := c.reader(NodeKind)
	if err != nil {
		return nil, err
	}
	list := &corev1.NodeList{}
	if err := ca.List(ctx, list); err != nil {
		return nil, clusterErr(c.cluster, "listing cached nodes", err)
	}
	return list.Items, nil
}

// ListPods returns the child's Pods (trimmed) from the cache, or
// ErrPodsNotWatched when no owner watches with Pods.
func (c *ClusterCache) ListPods(ctx context.Context) ([]corev1.Pod, error) {
	ca, err := c.reader(PodKind)
	if err != nil {
		return nil, err
	}
	list := &corev1.PodList{}
	if err := ca.List(ctx, list); err != nil {
		return nil, clusterErr(c.cluster, "listing cached pods", err)
	}
	return list.Items, nil
}

func (c *ClusterCache) reader(kind Kind) (cache.Cache, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	inf, notWatched := c.nodes, ErrNodesNotWatched
	if kind == PodKind {
		inf, notWatched = c.pods, ErrPodsNotWatched
	}
	switch {
	case c.stopped:
		return nil, fmt.Errorf("cluster %s: %w", c.cluster, ErrCacheStopped)
	case inf == nil:
		return nil, fmt.Errorf("cluster %s: %w", c.cluster, notWatched)
	case !inf.HasSynced():
		return nil, fmt.Errorf("cluster %s: %ss not synced", c.cluster, strings.ToLower(string(kind)))
	}
	return c.cache, nil
}

// Synced reports whether the cache runs and its Node and Pod informers, of
// those it runs, have synced.
func (c *ClusterCache) Synced() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.stopped && (c.nodes == nil || c.nodes.HasSynced()) && (c.pods == nil || c.pods.HasSynced())
}

// LastError returns the current list or watch error of the cache (naming the
// cluster; it wraps ErrUnreachable when the child cannot be reached), or nil
// once the informers list or watch successfully again. While it is set, the
// cache keeps serving the last data it saw.
func (c *ClusterCache) LastError() error {
	c.errMu.Lock()
	defer c.errMu.Unlock()
	for _, k := range []Kind{NodeKind, PodKind} {
		if err := c.errs[k]; err != nil {
			return clusterErr(c.cluster, "watching "+string(k)+"s", err)
		}
	}
	if err := c.errs[GatewayKind]; IsUnreachable(err) {
		// (Other Gateway errors, such as the API not installed, say
		// nothing about reachability; Gateway reports them.)
		return clusterErr(c.cluster, "watching Gateways", err)
	}
	return nil
}

// start builds and starts the informer cache, with no informer yet (the
// ensure methods add them), and closes ready. On failure it stops the cache.
func (c *ClusterCache) start(cfg *rest.Config) {
	err := c.launch(cfg)
	if err != nil {
		c.mu.Lock()
		c.stopped = true
		c.mu.Unlock()
		c.cancel()
		close(c.done)
	}
	c.startErr = err
	close(c.ready)
}

func (c *ClusterCache) launch(cfg *rest.Config) error {
	// The mapper is static: the kinds are known, and a Gateway API that is
	// not installed shows as a failing list (see Gateway), not as a
	// discovery error.
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{corev1.SchemeGroupVersion, gatewayv1.SchemeGroupVersion})
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Node"), meta.RESTScopeRoot)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Pod"), meta.RESTScopeNamespace)
	// (Its plural is not the one the default mapper would guess.)
	mapper.AddSpecific(gatewayv1.SchemeGroupVersion.WithKind("Gateway"), gatewayv1.SchemeGroupVersion.WithResource("gateways"),
		gatewayv1.SchemeGroupVersion.WithResource("gateway"), meta.RESTScopeNamespace)
	ca, err := cache.New(cfg, cache.Options{
		Scheme:                      cacheScheme,
		Mapper:                      mapper,
		ReaderFailOnMissingInformer: true,
		DefaultTransform:            trim,
		NewInformer:                 c.newInformer,
	})
	if err != nil {
		return clusterErr(c.cluster, "creating cache", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return fmt.Errorf("cluster %s: %w", c.cluster, ErrCacheStopped)
	}
	c.cache = ca
	c.m.wg.Go(func() {
		defer close(c.done)
		_ = ca.Start(c.ctx)
	})
	return nil
}

// ensureNodes starts the Node informer unless it runs and waits for it to
// sync (bounded by ctx and SyncTimeout); on failure it stops it again.
func (c *ClusterCache) ensureNodes(ctx context.Context) error {
	inf, err := c.startInformer(&corev1.Node{}, NodeKind, &c.nodes)
	if err != nil {
		return err
	}
	if err := c.waitSynced(ctx, inf, NodeKind); err != nil {
		c.stopNodes(inf)
		return err
	}
	c.live.Store(true)
	return nil
}

// stopNodes stops the Node informer if it is inf (any, when inf is nil).
func (c *ClusterCache) stopNodes(inf cache.Informer) {
	c.stopInformer(&corev1.Node{}, NodeKind, &c.nodes, inf)
}

// ensurePods starts the Pod informer unless it runs and waits for it to
// sync (bounded by ctx and SyncTimeout); on failure it stops it again.
func (c *ClusterCache) ensurePods(ctx context.Context) error {
	inf, err := c.startInformer(&corev1.Pod{}, PodKind, &c.pods)
	if err != nil {
		return err
	}
	if err := c.waitSynced(ctx, inf, PodKind); err != nil {
		c.stopPods(inf)
		return err
	}
	c.live.Store(true)
	return nil
}

// stopPods stops the Pod informer if it is inf (any, when inf is nil).
func (c *ClusterCache) stopPods(inf cache.Informer) {
	c.stopInformer(&corev1.Pod{}, PodKind, &c.pods, inf)
}

// startInformer returns the informer of obj's kind held in slot, creating
// (and starting) it with the notifying handler when there is none.
func (c *ClusterCache) startInformer(obj client.Object, kind Kind, slot *cache.Informer) (cache.Informer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil, fmt.Errorf("cluster %s: %w", c.cluster, ErrCacheStopped)
	}
	if *slot != nil {
		return *slot, nil
	}
	inf, err := c.cache.GetInformer(c.ctx, obj, cache.BlockUntilSynced(false))
	if err == nil {
		_, err = inf.AddEventHandler(c.handler(kind))
	}
	if err != nil {
		return nil, clusterErr(c.cluster, "creating "+strings.ToLower(string(kind))+" informer", err)
	}
	*slot = inf
	return inf, nil
}

// stopInformer stops the informer in slot if it is inf (any, when inf is
// nil), and forgets its error.
func (c *ClusterCache) stopInformer(obj client.Object, kind Kind, slot *cache.Informer, inf cache.Informer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if *slot == nil || (inf != nil && *slot != inf) {
		return
	}
	if !c.stopped {
		_ = c.cache.RemoveInformer(c.ctx, obj)
	}
	*slot = nil
	c.setErr(kind, nil)
}

// waitSynced waits until inf has synced, an error is recorded for kind,
// SyncTimeout passes, ctx ends or the cache stops.
func (c *ClusterCache) waitSynced(ctx context.Context, inf cache.Informer, kind Kind) error {
	timer := time.NewTimer(c.m.opts.SyncTimeout)
	defer timer.Stop()
	synced := inf.HasSyncedChecker().Done()
	what := "syncing " + string(kind) + "s"
	for {
		c.errMu.Lock()
		err, errCh := c.errs[kind], c.errCh
		c.errMu.Unlock()
		if err != nil {
			return clusterErr(c.cluster, what, err)
		}
		select {
		case <-synced:
			return nil
		case <-errCh:
		case <-timer.C:
			return fmt.Errorf("cluster %s: %s: %w: not synced within %s", c.cluster, what, ErrUnreachable, c.m.opts.SyncTimeout)
		case <-ctx.Done():
			return clusterErr(c.cluster, what, ctx.Err())
		case <-c.ctx.Done():
			return fmt.Errorf("cluster %s: %w", c.cluster, ErrCacheStopped)
		}
	}
}

// stop marks the cache stopped and cancels its goroutines; wait waits for them.
func (c *ClusterCache) stop() {
	c.mu.Lock()
	c.stopped = true
	c.mu.Unlock()
	c.cancel()
}

func (c *ClusterCache) wait() {
	<-c.ready
	<-c.done
}

// setErr records (or clears, with nil) the error of kind's informer and
// announces reachability changes of a synced cache, read from its Nodes and
// Pods. A Gateway informer's errors (e.g. the Gateway API not installed)
// say nothing about reachability: their start and end are announced to
// Gateway subscribers.
func (c *ClusterCache) setErr(kind Kind, err error) {
	c.errMu.Lock()
	reachErr := func() bool { return c.errs[NodeKind] != nil || c.errs[PodKind] != nil }
	before, had := reachErr(), c.errs[kind] != nil
	if err == nil {
		delete(c.errs, kind)
	} else {
		c.errs[kind] = err
		close(c.errCh)
		c.errCh = make(chan struct{})
	}
	after, has := reachErr(), c.errs[kind] != nil
	c.errMu.Unlock()
	if !c.live.Load() || c.ctx.Err() != nil {
		return
	}
	if kind == GatewayKind {
		if had != has {
			c.m.notify(c.cluster, GatewayKind)
		}
		return
	}
	if before == after {
		return
	}
	if after {
		c.m.log.Info("child cluster cache lost its API server", "cluster", c.cluster, "error", SafeError(err))
	} else {
		c.m.log.Info("child cluster cache reaches its API server again", "cluster", c.cluster)
	}
	c.m.notify(c.cluster, "")
}

// observe records the outcome of a list or watch request of informer inf,
// unless inf was stopped since.
func (c *ClusterCache) observe(inf any, kind Kind, err error, isWatch bool) {
	c.mu.Lock()
	current := (kind == NodeKind && any(c.nodes) == inf) || (kind == PodKind && any(c.pods) == inf) ||
		(kind == GatewayKind && any(c.gateways) == inf)
	c.mu.Unlock()
	switch {
	case !current || c.ctx.Err() != nil:
	case err == nil:
		c.setErr(kind, nil)
	case errors.Is(err, context.Canceled):
	case isWatch && !IsUnreachable(err) && !apierrors.IsUnauthorized(err) && !apierrors.IsForbidden(err):
		// Other watch errors (e.g. a server without streaming lists) make
		// the reflector fall back to a list, which reports its own errors.
	default:
		c.setErr(kind, err)
	}
}

func (c *ClusterCache) handler(kind Kind) toolscache.ResourceEventHandler {
	notify := func() {
		if c.ctx.Err() == nil {
			c.m.notify(c.cluster, kind)
		}
	}
	return toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(_ any, initial bool) {
			if !initial {
				notify()
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			if changed(oldObj, newObj) {
				notify()
			}
		},
		DeleteFunc: func(any) { notify() },
	}
}

// trim is the cache's transform; other objects (such as
// DeletedFinalStateUnknown tombstones) pass unchanged.
func trim(obj any) (any, error) {
	switch o := obj.(type) {
	case *corev1.Node:
		return TrimNode(o), nil
	case *corev1.Pod:
		return TrimPod(o), nil
	case *gatewayv1.Gateway:
		return TrimGateway(o), nil
	}
	return obj, nil
}
