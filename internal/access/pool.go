package access

import (
	"maps"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// PoolKey names one port pool: the tenant Gateway of one regional cluster.
type PoolKey struct {
	// Cluster is the regional ClusterDeployment.
	Cluster types.NamespacedName
	// Gateway is the tenant Gateway on it.
	Gateway types.NamespacedName
}

// Claim is an assignment recorded outside the ledger, e.g. on a workspace's
// status or by its own live route.
type Claim struct {
	// Holder is the workspace.
	Holder types.NamespacedName
	// Endpoint is the workspace's TCP or SSH endpoint.
	Endpoint string
	// Listener is the pool listener it holds.
	Listener string
}

// Request asks the ledger for the ports of one workspace's TCP and SSH endpoints.
type Request struct {
	// Holder is the workspace.
	Holder types.NamespacedName
	// Endpoints are its TCP and SSH endpoints, in the class's order.
	Endpoints []string
	// Pool is the Gateway's TCP listeners, sorted by port.
	Pool []Listener
	// Claims seed the ledger: every workspace's recorded assignments of this
	// pool, the holder's included. The ledger keeps what it already holds
	// when a claim disagrees.
	Claims []Claim
	// Taken lists listeners used by routes of other writers (another
	// controller, a workspace of another manager); they are never handed out.
	Taken map[string]bool
	// Live reports whether another holder still exists; the ports of those
	// that do not are freed. Nil keeps every holder.
	Live func(types.NamespacedName) bool
	// Stripe, when Of > 1, limits the listeners handed out anew to those
	// whose place in Pool is Index modulo Of: the stripe of one of Of
	// ledgers that share the pool without talking to each other (the shards
	// of Apiary, each with a ledger of its own), so that two of them never
	// hand out the same free listener at once. What a holder holds or
	// claims already is kept wherever it is.
	Stripe Stripe
}

// Stripe is one of Of disjoint parts of a pool: the listeners at positions
// Index, Index+Of, Index+2·Of, … of the pool sorted by port.
type Stripe struct {
	Index, Of int
}

// has reports whether the listener at position i of the pool is in the
// stripe; every listener is when Of is 0 or 1.
func (s Stripe) has(i int) bool { return s.Of <= 1 || i%s.Of == s.Index }

type hold struct {
	holder   types.NamespacedName
	endpoint string
}

// Ledger hands out the ports of each pool so that no two endpoints ever
// hold the same one, also when several workers assign at once: it remembers
// each assignment from the moment it is made, before any status or route
// shows it. It is safe for concurrent use.
type Ledger struct {
	mu    sync.Mutex
	pools map[PoolKey]map[string]hold // listener name → holder
}

// NewLedger returns an empty ledger.
func NewLedger() *Ledger { return &Ledger{pools: map[PoolKey]map[string]hold{}} }

// Assign gives each endpoint of the request a listener of the pool: the one
// it holds already (sticky for the workspace's life, as long as the listener
// exists), else the lowest-port listener of the request's stripe that
// nobody holds or uses. It
// returns the assignments by endpoint; endpoints left out found the pool
// exhausted. Listeners the holder holds for endpoints it no longer has are
// freed.
func (l *Ledger) Assign(key PoolKey, req Request) map[string]Listener {
	l.mu.Lock()
	defer l.mu.Unlock()
	inPool := make(map[string]Listener, len(req.Pool))
	for _, p := range req.Pool {
		inPool[p.Name] = p
	}
	wanted := make(map[string]bool, len(req.Endpoints))
	for _, e := range req.Endpoints {
		wanted[e] = true
	}
	holds := l.pools[key]
	if holds == nil {
		holds = map[string]hold{}
		l.pools[key] = holds
	}
	live := func(h types.NamespacedName) bool { return h == req.Holder || req.Live == nil || req.Live(h) }
	// Forget holders that are gone, listeners that left the pool, and the
	// holder's endpoints that are no more.
	for name, h := range holds {
		_, ok := inPool[name]
		if !ok || !live(h.holder) || (h.holder == req.Holder && !wanted[h.endpoint]) {
			delete(holds, name)
		}
	}
	has := func(holder types.NamespacedName, endpoint string) bool {
		for _, h := range holds {
			if h.holder == holder && h.endpoint == endpoint {
				return true
			}
		}
		return false
	}
	for _, c := range req.Claims {
		if _, ok := inPool[c.Listener]; !ok || !live(c.Holder) || (c.Holder == req.Holder && !wanted[c.Endpoint]) {
			continue
		}
		if _, held := holds[c.Listener]; held || has(c.Holder, c.Endpoint) {
			continue
		}
		holds[c.Listener] = hold{holder: c.Holder, endpoint: c.Endpoint}
	}
	out := map[string]Listener{}
	for name, h := range holds {
		if h.holder == req.Holder {
			out[h.endpoint] = inPool[name]
		}
	}
	for _, e := range req.Endpoints {
		if _, ok := out[e]; ok {
			continue
		}
		for i, p := range req.Pool {
			if _, held := holds[p.Name]; held || req.Taken[p.Name] || !req.Stripe.has(i) {
				continue
			}
			holds[p.Name] = hold{holder: req.Holder, endpoint: e}
			out[e] = p
			break
		}
	}
	return out
}

// Held returns the listeners a workspace holds in a pool, by endpoint.
func (l *Ledger) Held(key PoolKey, holder types.NamespacedName) map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]string{}
	for name, h := range l.pools[key] {
		if h.holder == holder {
			out[h.endpoint] = name
		}
	}
	return out
}

// Release frees every port a workspace holds, in every pool.
func (l *Ledger) Release(holder types.NamespacedName) {
	l.mu.Lock()
	defer l.mu.Unlock()
	deleteHeld(l.pools, func(h hold) bool { return h.holder == holder })
}

// deleteHeld deletes the entries of each inner map that held reports, and
// the inner maps left empty: a holder's release from a ledger of grants
// by key.
func deleteHeld[K, N comparable, V any](grants map[K]map[N]V, held func(V) bool) {
	for key, inner := range grants {
		maps.DeleteFunc(inner, func(_ N, v V) bool { return held(v) })
		if len(inner) == 0 {
			delete(grants, key)
		}
	}
}
