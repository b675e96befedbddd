package access

import (
	"fmt"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
)

var (
	key  = PoolKey{Cluster: types.NamespacedName{Namespace: "t", Name: "regional"}, Gateway: types.NamespacedName{Namespace: "istio-system", Name: "gw"}}
	pool = []Listener{{"p0", 30000}, {"p1", 30001}, {"p2", 30002}}
	wsA  = types.NamespacedName{Namespace: "t", Name: "a"}
	wsB  = types.NamespacedName{Namespace: "t", Name: "b"}
	wsC  = types.NamespacedName{Namespace: "u", Name: "c"}
)

func ports(m map[string]Listener) map[string]int32 {
	out := map[string]int32{}
	for e, l := range m {
		out[e] = l.Port
	}
	return out
}

func TestLedgerAssign(t *testing.T) {
	type step struct {
		req  Request
		want map[string]int32
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{name: "lowest free first, one port per endpoint", steps: []step{
			{Request{Holder: wsA, Endpoints: []string{"ssh", "db"}, Pool: pool}, map[string]int32{"ssh": 30000, "db": 30001}},
			{Request{Holder: wsB, Endpoints: []string{"ssh"}, Pool: pool}, map[string]int32{"ssh": 30002}},
		}},
		{name: "exhaustion leaves the endpoint out, others keep theirs", steps: []step{
			{Request{Holder: wsA, Endpoints: []string{"ssh", "db"}, Pool: pool}, map[string]int32{"ssh": 30000, "db": 30001}},
			{Request{Holder: wsB, Endpoints: []string{"ssh", "db"}, Pool: pool}, map[string]int32{"ssh": 30002}},
		}},
		{name: "sticky across calls, also when a lower port frees", steps: []step{
			{Request{Holder: wsA, Endpoints: []string{"ssh"}, Pool: pool}, map[string]int32{"ssh": 30000}},
			{Request{Holder: wsB, Endpoints: []string{"ssh"}, Pool: pool}, map[string]int32{"ssh": 30001}},
			{Request{Holder: wsB, Endpoints: []string{"ssh"}, Pool: pool, Live: func(h types.NamespacedName) bool { return h != wsA }},
				map[string]int32{"ssh": 30001}},
			{Request{Holder: wsC, Endpoints: []string{"ssh"}, Pool: pool}, map[string]int32{"ssh": 30000}},
		}},
		{name: "ports used by other writers are skipped", steps: []step{
			{Request{Holder: wsA, Endpoints: []string{"ssh"}, Pool: pool, Taken: map[string]bool{"p0": true}}, map[string]int32{"ssh": 30001}},
		}},
		{name: "claims from statuses seed the ledger after a restart", steps: []step{
			{Request{Holder: wsC, Endpoints: []string{"ssh"}, Pool: pool, Claims: []Claim{
				{Holder: wsA, Endpoint: "ssh", Listener: "p0"}, {Holder: wsB, Endpoint: "ssh", Listener: "p2"}, {Holder: wsC, Endpoint: "ssh", Listener: "p2"}}},
				map[string]int32{"ssh": 30001}},
			{Request{Holder: wsA, Endpoints: []string{"ssh"}, Pool: pool}, map[string]int32{"ssh": 30000}},
		}},
		{name: "a claim of a gone workspace frees its port", steps: []step{
			{Request{Holder: wsB, Endpoints: []string{"ssh"}, Pool: pool, Claims: []Claim{{Holder: wsA, Endpoint: "ssh", Listener: "p0"}},
				Live: func(h types.NamespacedName) bool { return h != wsA }}, map[string]int32{"ssh": 30000}},
		}},
		{name: "the holder's own claim (its live route) is reused", steps: []step{
			{Request{Holder: wsA, Endpoints: []string{"ssh"}, Pool: pool, Claims: []Claim{{Holder: wsA, Endpoint: "ssh", Listener: "p2"}},
				Taken: map[string]bool{"p0": true}}, map[string]int32{"ssh": 30002}},
		}},
		{name: "an endpoint the class dropped frees its port", steps: []step{
			{Request{Holder: wsA, Endpoints: []string{"ssh", "db"}, Pool: pool}, map[string]int32{"ssh": 30000, "db": 30001}},
			{Request{Holder: wsA, Endpoints: []string{"db"}, Pool: pool}, map[string]int32{"db": 30001}},
			{Request{Holder: wsB, Endpoints: []string{"ssh"}, Pool: pool}, map[string]int32{"ssh": 30000}},
		}},
		{name: "a listener that left the pool is replaced by a free one", steps: []step{
			{Request{Holder: wsA, Endpoints: []string{"ssh"}, Pool: pool}, map[string]int32{"ssh": 30000}},
			{Request{Holder: wsA, Endpoints: []string{"ssh"}, Pool: pool[1:]}, map[string]int32{"ssh": 30001}},
		}},
		{name: "an empty pool assigns nothing", steps: []step{
			{Request{Holder: wsA, Endpoints: []string{"ssh"}}, map[string]int32{}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			l := NewLedger()
			for i, s := range tt.steps {
				g.Expect(ports(l.Assign(key, s.req))).To(Equal(s.want), "step %d", i)
			}
		})
	}
}

func TestLedgerHeldAndRelease(t *testing.T) {
	g := NewWithT(t)
	l := NewLedger()
	other := PoolKey{Cluster: types.NamespacedName{Namespace: "t", Name: "other"}, Gateway: key.Gateway}
	l.Assign(key, Request{Holder: wsA, Endpoints: []string{"ssh"}, Pool: pool})
	l.Assign(other, Request{Holder: wsA, Endpoints: []string{"ssh"}, Pool: pool})
	g.Expect(l.Assign(key, Request{Holder: wsB, Endpoints: []string{"ssh"}, Pool: pool[:1]})).To(BeEmpty())
	g.Expect(l.Held(key, wsA)).To(Equal(map[string]string{"ssh": "p0"}))

	l.Release(wsA)
	g.Expect(l.Held(key, wsA)).To(BeEmpty())
	g.Expect(l.Held(other, wsA)).To(BeEmpty())
	g.Expect(ports(l.Assign(key, Request{Holder: wsB, Endpoints: []string{"ssh"}, Pool: pool[:1]}))).To(Equal(map[string]int32{"ssh": 30000}))
}

// TestLedgerNeverDoubleBooks assigns from many workers at once: every port
// goes to one endpoint, and as many endpoints get one as the pool has ports.
func TestLedgerNeverDoubleBooks(t *testing.T) {
	g := NewWithT(t)
	l := NewLedger()
	big := make([]Listener, 20)
	for i := range big {
		big[i] = Listener{Name: fmt.Sprintf("p%d", i), Port: int32(30000 + i)}
	}
	var mu sync.Mutex
	owner := map[int32]string{}
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			holder := types.NamespacedName{Namespace: "t", Name: fmt.Sprintf("ws%d", w)}
			got := l.Assign(key, Request{Holder: holder, Endpoints: []string{"ssh", "db"}, Pool: big})
			mu.Lock()
			defer mu.Unlock()
			book(t, owner, holder, got)
		}()
	}
	wg.Wait()
	g.Expect(owner).To(HaveLen(len(big)))
}

// TestLedgersOfShardsNeverDoubleBook: the shards of Apiary each keep a
// ledger of their own for a regional cluster's pool they share, and see
// each other's assignments only when the workspaces' status or routes show
// them (the claims), which may be late or never before they assign. With a
// stripe each, no two of them hand out one port, whatever order and
// knowledge; without, the first free port goes to both at once. Every
// stripe is handed out, and what a holder holds outside its stripe (a
// workspace that moved to another shard) stays with it.
func TestLedgersOfShardsNeverDoubleBook(t *testing.T) {
	big := make([]Listener, 30)
	for i := range big {
		big[i] = Listener{Name: fmt.Sprintf("p%d", i), Port: int32(30000 + i)}
	}
	for _, shards := range []int{1, 2, 3, 4} {
		t.Run(fmt.Sprintf("%d shards", shards), func(t *testing.T) {
			g := NewWithT(t)
			ledgers := make([]*Ledger, shards)
			for i := range ledgers {
				ledgers[i] = NewLedger()
			}
			var mu sync.Mutex
			owner := map[int32]string{}
			var wg sync.WaitGroup
			for w := range 12 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					i := w % shards // the shard of the workspace's cluster
					holder := types.NamespacedName{Namespace: "t", Name: fmt.Sprintf("ws%d", w)}
					got := ledgers[i].Assign(key, Request{Holder: holder, Endpoints: []string{"ssh"}, Pool: big,
						Stripe: Stripe{Index: i, Of: shards}})
					mu.Lock()
					defer mu.Unlock()
					book(t, owner, holder, got)
					for _, p := range got {
						if (p.Port-30000)%int32(shards) != int32(i) {
							t.Errorf("shard %d handed out port %d outside its stripe", i, p.Port)
						}
					}
				}()
			}
			wg.Wait()
			g.Expect(owner).To(HaveLen(12), "every workspace got a port")
		})
	}

	g := NewWithT(t)
	// Without stripes two ledgers hand out the same first port.
	a, b := NewLedger(), NewLedger()
	pa := a.Assign(key, Request{Holder: wsA, Endpoints: []string{"ssh"}, Pool: big})
	pb := b.Assign(key, Request{Holder: wsB, Endpoints: []string{"ssh"}, Pool: big})
	g.Expect(pa["ssh"]).To(Equal(pb["ssh"]), "the collision stripes prevent")

	// A holder's port outside the stripe (claimed before it moved) is kept.
	c := NewLedger()
	got := c.Assign(key, Request{Holder: wsC, Endpoints: []string{"ssh"}, Pool: big, Stripe: Stripe{Index: 1, Of: 2},
		Claims: []Claim{{Holder: wsC, Endpoint: "ssh", Listener: "p4"}}})
	g.Expect(got["ssh"].Name).To(Equal("p4"))
	// The stripe runs out: an exhausted stripe leaves the endpoint out even with free ports in others.
	small := big[:3]
	d := NewLedger()
	g.Expect(d.Assign(key, Request{Holder: wsA, Endpoints: []string{"ssh"}, Pool: small, Stripe: Stripe{Index: 1, Of: 3}})).To(HaveKey("ssh"))
	g.Expect(d.Assign(key, Request{Holder: wsB, Endpoints: []string{"ssh"}, Pool: small, Stripe: Stripe{Index: 1, Of: 3}})).To(BeEmpty())
}

// book records the ports a holder got in owner, failing on a port that
// someone holds already.
func book(t *testing.T, owner map[int32]string, holder types.NamespacedName, got map[string]Listener) {
	t.Helper()
	for e, p := range got {
		if prev, dup := owner[p.Port]; dup {
			t.Errorf("port %d given to %s and %s/%s", p.Port, prev, holder, e)
		}
		owner[p.Port] = holder.String() + "/" + e
	}
}
