package access

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Claimant is a workspace that holds or asks for a host name, with what
// orders claimants that hold one host at once: the older workspace (by
// creation time, then UID) keeps it.
type Claimant struct {
	// Key is the workspace.
	Key types.NamespacedName
	// Created is the workspace's creation time.
	Created time.Time
	// UID is the workspace's UID.
	UID types.UID
}

// Older reports whether c was created before o (the UID breaks a tie).
func (c Claimant) Older(o Claimant) bool {
	if !c.Created.Equal(o.Created) {
		return c.Created.Before(o.Created)
	}
	return c.UID < o.UID
}

// HostClaim is a host name a workspace holds by a record outside the
// ledger: its route on the regional cluster, or its status.
type HostClaim struct {
	Holder Claimant
	Host   string
}

// HostRequest asks for the host names of one workspace's HTTP endpoints
// on one tenant Gateway.
type HostRequest struct {
	// Holder is the workspace that asks.
	Holder Claimant
	// Hosts are the host names it needs now. Those it held and no longer
	// needs are freed.
	Hosts []string
	// Claims are the records of who holds which host: the routes of the
	// regional cluster, the workspaces' status. The requester's own are
	// among them.
	Claims []HostClaim
	// Taken names, by host, the holder of routes of other writers (another
	// controller's HTTPRoute); those hosts are never handed out.
	Taken map[string]string
	// Live reports whether a workspace still exists; the hosts of those
	// that do not are free. Nil keeps every holder.
	Live func(types.NamespacedName) bool
}

// HostLedger hands out the host names of each tenant Gateway so that no two
// workspaces hold one, also when several workers claim at once: it
// remembers each grant from the moment it is made, before any route or
// status shows it. It is safe for concurrent use.
type HostLedger struct {
	mu       sync.Mutex
	gateways map[PoolKey]map[string]Claimant // host → grantee
}

// NewHostLedger returns an empty ledger.
func NewHostLedger() *HostLedger { return &HostLedger{gateways: map[PoolKey]map[string]Claimant{}} }

// Claim decides who holds each host name of the request, first come, first
// served: a workspace that holds the host by a grant of this ledger or by a
// claim (its route, its status) keeps it; a route of another writer keeps
// it; otherwise the requester gets it, and holds it from now on. When
// several workspaces hold one host at once (ledgers of different
// processes granted it to each, or routes made before Apiary checked), the
// oldest keeps it. Claim returns the hosts of the request that another
// holds, each with its holder as messages name it (HeldBy); the requester
// holds the others.
func (l *HostLedger) Claim(key PoolKey, req HostRequest) map[string]string {
	l.mu.Lock()
	defer l.mu.Unlock()
	self := req.Holder.Key
	live := func(k types.NamespacedName) bool { return k == self || req.Live == nil || req.Live(k) }
	wanted := make(map[string]bool, len(req.Hosts))
	for _, h := range req.Hosts {
		wanted[h] = true
	}
	grants := l.gateways[key]
	if grants == nil {
		grants = map[string]Claimant{}
		l.gateways[key] = grants
	}
	// Forget the hosts the requester no longer needs. The grantees of the
	// hosts asked for are checked below: only those cost a look at Live.
	for h, c := range grants {
		if c.Key == self && !wanted[h] {
			delete(grants, h)
		}
	}
	claims := map[string][]Claimant{}
	for _, c := range req.Claims {
		if wanted[c.Host] && live(c.Holder.Key) {
			claims[c.Host] = append(claims[c.Host], c.Holder)
		}
	}
	out := map[string]string{}
	for _, h := range req.Hosts {
		holders := claims[h]
		if g, ok := grants[h]; ok && live(g.Key) {
			holders = append(holders, g)
		} else if ok {
			delete(grants, h) // the grantee is gone
		}
		holder, held := oldest(holders)
		_, taken := req.Taken[h]
		switch {
		case held && holder.Key != self:
			out[h] = "workspace " + holder.Key.String()
		case !held && taken:
			out[h] = req.Taken[h]
		default:
			grants[h] = req.Holder
			continue
		}
		if grants[h].Key == self {
			delete(grants, h) // the requester yields to an older holder
		}
	}
	if len(grants) == 0 {
		delete(l.gateways, key)
	}
	return out
}

// oldest returns the oldest of the claimants; false when there is none.
func oldest(cs []Claimant) (Claimant, bool) {
	if len(cs) == 0 {
		return Claimant{}, false
	}
	best := cs[0]
	for _, c := range cs[1:] {
		if c.Older(best) {
			best = c
		}
	}
	return best, true
}

// Held returns the host names a workspace holds by a grant of the ledger on
// a tenant Gateway, sorted.
func (l *HostLedger) Held(key PoolKey, holder types.NamespacedName) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for h, c := range l.gateways[key] {
		if c.Key == holder {
			out = append(out, h)
		}
	}
	sort.Strings(out)
	return out
}

// Release frees every host name a workspace holds, on every Gateway.
func (l *HostLedger) Release(holder types.NamespacedName) {
	l.mu.Lock()
	defer l.mu.Unlock()
	deleteHeld(l.gateways, func(c Claimant) bool { return c.Key == holder })
}

// HeldBy is the message of an endpoint whose host name another holds.
func HeldBy(host, holder string) string {
	return fmt.Sprintf("host name %s is held by %s", host, holder)
}

// HostOf returns the host name of an HTTP(S) URL as Plan makes it, lower
// case; "" for anything else.
func HostOf(url string) string {
	for _, scheme := range []string{"https://", "http://"} {
		if rest, ok := strings.CutPrefix(url, scheme); ok {
			if i := strings.IndexAny(rest, ":/"); i >= 0 {
				rest = rest[:i]
			}
			return strings.ToLower(rest)
		}
	}
	return ""
}
