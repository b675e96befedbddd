package childcluster

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// DefaultIdleTimeout is how long a cluster's cache, or its Node, Pod or
// Gateway informer, keeps running after its last owner released it (Options.IdleTimeout).
// It outlasts the pauses between the GPU admissions of a busy cluster and
// the resync of its stopped workspaces, so that owners coming and going
// share one list and one watch of each kind instead of starting and stopping
// them each time.
const DefaultIdleTimeout = 10 * time.Minute

// part is what lingers: the whole cache or one of its optional informers.
type part string

const (
	partCache    part = "cache"
	partNodes    part = "nodes"
	partPods     part = "pods"
	partGateways part = "gateways"
)

// linger is the pending stop of a part of a cluster's cache no owner needs.
type linger struct{ timer *time.Timer }

// idleLocked is called for a part of e's cache that no owner needs. It
// reports whether the part is to stop now (IdleTimeout negative); otherwise
// the part gets a pending stop after IdleTimeout, unless it has one. m.mu
// must be held.
func (m *Manager) idleLocked(cd types.NamespacedName, e *clusterEntry, p part) bool {
	if m.opts.IdleTimeout < 0 {
		return true
	}
	if e.lingers[p] != nil || !e.cache.runs(p) {
		return false
	}
	l := &linger{}
	// expire takes m.mu, held here: it sees l in e.lingers.
	l.timer = time.AfterFunc(m.opts.IdleTimeout, func() { m.expire(cd, p, l) })
	e.lingers[p] = l
	return false
}

// keepLocked cancels the pending stops of the parts of e's cache want needs
// (the cache itself always). m.mu must be held.
func keepLocked(e *clusterEntry, want WatchOptions) {
	cancelLinger(e, partCache)
	if want.Nodes {
		cancelLinger(e, partNodes)
	}
	if want.Pods {
		cancelLinger(e, partPods)
	}
	if want.Gateways {
		cancelLinger(e, partGateways)
	}
}

func cancelLinger(e *clusterEntry, p part) {
	if l := e.lingers[p]; l != nil {
		l.timer.Stop()
		delete(e.lingers, p)
	}
}

// cancelLingers cancels every pending stop of e, whose cache stopped or was
// replaced. m.mu must be held.
func cancelLingers(e *clusterEntry) {
	for p := range e.lingers {
		cancelLinger(e, p)
	}
}

// expire stops a part of the cache of cd that stayed unneeded for
// IdleTimeout, unless its pending stop l was cancelled since.
func (m *Manager) expire(cd types.NamespacedName, p part, l *linger) {
	m.mu.Lock()
	e := m.clusters[cd]
	if e == nil || e.lingers[p] != l || m.isStopped() {
		m.mu.Unlock()
		return
	}
	delete(e.lingers, p)
	need := e.need()
	var stopped *ClusterCache
	did := true
	switch c := e.cache; {
	case c == nil:
		did = false
	case p == partCache && len(e.owners) == 0:
		stopped = c
		c.stop()
		e.cache = nil
		cancelLingers(e)
	case p == partNodes && !need.Nodes:
		c.stopNodes(nil)
	case p == partPods && !need.Pods:
		c.stopPods(nil)
	case p == partGateways && !need.Gateways:
		c.stopGateways()
	default:
		did = false
	}
	if e.cache == nil && e.client == nil && len(e.owners) == 0 {
		delete(m.clusters, cd)
	}
	m.mu.Unlock()
	if stopped != nil {
		stopped.wait()
		m.log.V(1).Info("stopped child cluster cache", "cluster", cd, "reason", "no owner left", "idle", m.opts.IdleTimeout)
	} else if did {
		m.log.V(1).Info("stopped child cluster informer", "cluster", cd, "informer", string(p), "reason", "no owner needs it", "idle", m.opts.IdleTimeout)
	}
}

// need is what the owners of e need.
func (e *clusterEntry) need() WatchOptions {
	all := make([]WatchOptions, 0, len(e.owners))
	for _, o := range e.owners {
		all = append(all, o)
	}
	return union(all...)
}

// runs reports whether part p of the cache runs (the cache itself always).
func (c *ClusterCache) runs(p part) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch p {
	case partNodes:
		return c.nodes != nil
	case partPods:
		return c.pods != nil
	case partGateways:
		return c.gateways != nil
	}
	return !c.stopped
}
