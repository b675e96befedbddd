package childcluster

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/types"
)

// WatchOptions say what an owner needs from a child cache: each informer
// runs while some owner needs it (and IdleTimeout after). With none set,
// Nodes is.
type WatchOptions struct {
	// Nodes starts the Node informer (GPU inventory and the GPU gate need
	// it).
	Nodes bool
	// Pods starts the Pod informer (the GPU gate, and stopped workspaces
	// kept stopped, need it).
	Pods bool
	// Gateways also starts the Gateway informer (workspace routes read the
	// tenant Gateway and the waypoints); it stops when no owner needs it.
	// A cluster that does not serve the Gateway API is no error of Watch:
	// the informer keeps trying, Gateway says so meanwhile, and owners are
	// notified (GatewayKind) once it is served.
	Gateways bool
}

// union is what a set of owners needs.
func union(opts ...WatchOptions) WatchOptions {
	var out WatchOptions
	for _, o := range opts {
		out.Nodes = out.Nodes || o.Nodes
		out.Pods = out.Pods || o.Pods
		out.Gateways = out.Gateways || o.Gateways
	}
	return out
}

// Watch returns the running, synced informer cache of the child cluster of
// ClusterDeployment cd and registers owner (a key such as
// "colony/<ns>/<name>" or "workspace/<ns>/<name>") as its user, starting the
// cache if needed. Call it on every reconcile: it is cheap when the cache runs,
// and it rebuilds the cache when the kubeconfig Secret changed. The wait for a
// new cache is bounded by ctx and Options.SyncTimeout; a child that cannot be
// reached gives an error wrapping ErrUnreachable, and the owner is not
// registered unless it already was. With several opts, an informer is
// started if any asks for it; with none, the Node informer is.
func (m *Manager) Watch(ctx context.Context, cd types.NamespacedName, owner string, opts ...WatchOptions) (*ClusterCache, error) {
	want := union(opts...)
	if want == (WatchOptions{}) {
		want.Nodes = true
	}
	// A cache stopped by a concurrent Release or Secret change is retried.
	for range 3 {
		c, err := m.watchOnce(ctx, cd, owner, want)
		if errors.Is(err, ErrCacheStopped) && ctx.Err() == nil && !m.isStopped() {
			continue
		}
		return c, err
	}
	return nil, fmt.Errorf("cluster %s: %w: the cache was replaced repeatedly", cd, ErrCacheStopped)
}

func (m *Manager) watchOnce(ctx context.Context, cd types.NamespacedName, owner string, want WatchOptions) (*ClusterCache, error) {
	if m.isStopped() {
		return nil, ErrManagerStopped
	}
	kubeconfig, err := m.kubeconfig(ctx, cd)
	if err != nil {
		return nil, err
	}
	hash := kubeconfigHash(kubeconfig)

	m.mu.Lock()
	if m.isStopped() {
		m.mu.Unlock()
		return nil, ErrManagerStopped
	}
	e := m.entryLocked(cd)
	var replaced *ClusterCache
	if e.cache != nil && e.cache.hash != hash {
		replaced = e.cache
		replaced.stop()
		e.cache = nil
		cancelLingers(e)
	}
	c := e.cache
	if c == nil {
		cfg, err := m.restConfig(cd, kubeconfig)
		if err != nil {
			m.mu.Unlock()
			return nil, err
		}
		cfg.Timeout = 0 // watches are long requests; SyncTimeout bounds the first sync
		c = newClusterCache(m, cd, hash)
		e.cache = c
		m.wg.Go(func() { c.start(cfg) })
		m.log.V(1).Info("starting child cluster cache", "cluster", cd)
	}
	prev, existed := e.owners[owner]
	e.owners[owner] = want
	keepLocked(e, want)
	m.mu.Unlock()
	if replaced != nil {
		replaced.wait()
		m.log.V(1).Info("stopped child cluster cache", "cluster", cd, "reason", "kubeconfig changed")
		m.notify(cd, "") // other owners hold the stopped cache
	}

	undo := func() {
		m.mu.Lock()
		if e := m.clusters[cd]; e != nil {
			if existed {
				e.owners[owner] = prev
			} else {
				delete(e.owners, owner)
			}
		}
		stop := m.settleLocked(cd)
		m.mu.Unlock()
		if stop != nil {
			stop.wait()
		}
	}

	select {
	case <-c.ready:
	case <-ctx.Done():
		undo()
		return nil, clusterErr(cd, "waiting for the cache to sync", ctx.Err())
	}
	if c.startErr != nil {
		m.dropFailed(cd, c)
		undo()
		return nil, c.startErr
	}
	if err := c.ensure(ctx, want); err != nil {
		m.setUnreachable(cd, IsUnreachable(err))
		if !c.live.Load() {
			// Nothing of the new cache ever synced: start afresh next time.
			m.dropFailed(cd, c)
		}
		undo()
		return nil, err
	}
	m.setUnreachable(cd, false)
	if existed && (prev.Nodes && !want.Nodes || prev.Pods && !want.Pods || prev.Gateways && !want.Gateways) {
		m.mu.Lock()
		stop := m.settleLocked(cd)
		m.mu.Unlock()
		if stop != nil {
			stop.wait()
		}
	}
	c.mu.Lock()
	stopped := c.stopped
	c.mu.Unlock()
	if stopped {
		return nil, fmt.Errorf("cluster %s: %w", cd, ErrCacheStopped)
	}
	return c, nil
}

// Release unregisters owner from the cache of cd. The cache stops when its
// last owner is gone, and the Pod informer when no owner needs Pods, both
// after Options.IdleTimeout: an owner that comes back meanwhile finds them
// running, with no new list or watch.
func (m *Manager) Release(cd types.NamespacedName, owner string) {
	m.mu.Lock()
	e := m.clusters[cd]
	if e == nil {
		m.mu.Unlock()
		return
	}
	delete(e.owners, owner)
	stop := m.settleLocked(cd)
	m.mu.Unlock()
	if stop != nil {
		stop.wait()
		m.log.V(1).Info("stopped child cluster cache", "cluster", cd, "reason", "no owner left")
	}
}

// ReleaseElsewhere unregisters owner from the caches of every cluster but
// keep, stopping those it was the last owner of: an owner that moved (a
// workspace whose routes go to another regional cluster) or needs no cache
// any more (no keep) leaves nothing behind.
func (m *Manager) ReleaseElsewhere(owner string, keep ...types.NamespacedName) {
	m.mu.Lock()
	var stopped []*ClusterCache
	for cd, e := range m.clusters {
		if _, ok := e.owners[owner]; !ok || slices.Contains(keep, cd) {
			continue
		}
		delete(e.owners, owner)
		if c := m.settleLocked(cd); c != nil {
			stopped = append(stopped, c)
		}
	}
	m.mu.Unlock()
	for _, c := range stopped {
		c.wait()
		m.log.V(1).Info("stopped child cluster cache", "cluster", c.cluster, "reason", "no owner left")
	}
}

// Owners returns the owners registered for cd, for diagnostics.
func (m *Manager) Owners(cd types.NamespacedName) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	if e := m.clusters[cd]; e != nil {
		for o := range e.owners {
			out = append(out, o)
		}
	}
	return out
}

// settleLocked stops what no owner of cd needs: the cache when no owner is
// left (returning it to be waited for outside the lock), the Node, Pod and
// Gateway informers when no owner needs them. They stop after IdleTimeout (see
// idleLocked), at once when it is negative. The entry is dropped when it
// holds nothing. m.mu must be held.
func (m *Manager) settleLocked(cd types.NamespacedName) *ClusterCache {
	e := m.clusters[cd]
	if e == nil {
		return nil
	}
	var stopped *ClusterCache
	if len(e.owners) == 0 && e.cache != nil && m.idleLocked(cd, e, partCache) {
		stopped = e.cache
		stopped.stop()
		e.cache = nil
		cancelLingers(e)
	}
	if e.cache != nil {
		need := e.need()
		if !need.Nodes && m.idleLocked(cd, e, partNodes) {
			e.cache.stopNodes(nil)
		}
		if !need.Pods && m.idleLocked(cd, e, partPods) {
			e.cache.stopPods(nil)
		}
		if !need.Gateways && m.idleLocked(cd, e, partGateways) {
			e.cache.stopGateways()
		}
	}
	if e.cache == nil && e.client == nil && len(e.owners) == 0 {
		delete(m.clusters, cd)
	}
	return stopped
}

// dropFailed forgets and stops cache c of cd after its start failed, so
// that the next Watch starts a new one.
func (m *Manager) dropFailed(cd types.NamespacedName, c *ClusterCache) {
	m.mu.Lock()
	if e := m.clusters[cd]; e != nil && e.cache == c {
		e.cache = nil
		cancelLingers(e)
	}
	m.mu.Unlock()
	c.stop()
	c.wait()
}

// ensure starts (unless they run) the informers want needs and waits for
// them to sync.
func (c *ClusterCache) ensure(ctx context.Context, want WatchOptions) error {
	if want.Nodes {
		if err := c.ensureNodes(ctx); err != nil {
			return err
		}
	}
	if want.Pods {
		if err := c.ensurePods(ctx); err != nil {
			return err
		}
	}
	if want.Gateways {
		return c.ensureGateways(ctx)
	}
	return nil
}

// Running returns the running cache of cd, or nil when none runs (or
// lingers, see Options.IdleTimeout). It starts nothing, registers no owner
// and makes no request: a reader that may use the cluster's caches when
// others keep them open, but does not justify opening them, reads through
// it (and finds ErrPodsNotWatched, or a cache not synced, when what it
// reads is not open). The cache is not checked against the kubeconfig
// Secret; it may stop at any time (reads return ErrCacheStopped).
func (m *Manager) Running(cd types.NamespacedName) *ClusterCache {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.clusters[cd]; e != nil {
		return e.cache
	}
	return nil
}
