package access

import (
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
)

const hostAPI, hostWeb = "nb-api.example.com", "nb.example.com"

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Workspaces by age: nb is the oldest, c the youngest; twin was created
// with nb, its UID sorts after nb's.
var (
	nb    = Claimant{Key: types.NamespacedName{Namespace: "team", Name: "nb"}, Created: t0, UID: "1"}
	nbAPI = Claimant{Key: types.NamespacedName{Namespace: "team", Name: "nb-api"}, Created: t0.Add(time.Minute), UID: "0"}
	cc    = Claimant{Key: types.NamespacedName{Namespace: "other", Name: "c"}, Created: t0.Add(time.Hour), UID: "2"}
	twin  = Claimant{Key: types.NamespacedName{Namespace: "team", Name: "twin"}, Created: t0, UID: "9"}
)

func gone(ws ...Claimant) func(types.NamespacedName) bool {
	return func(k types.NamespacedName) bool {
		for _, w := range ws {
			if w.Key == k {
				return false
			}
		}
		return true
	}
}

func TestHostLedgerClaim(t *testing.T) {
	type step struct {
		req  HostRequest
		want map[string]string // hosts another holds
	}
	heldByNB := map[string]string{hostAPI: "workspace team/nb"}
	tests := []struct {
		name  string
		steps []step
	}{
		{name: "first come, first served; the holder keeps it", steps: []step{
			{HostRequest{Holder: nb, Hosts: []string{hostWeb, hostAPI}}, map[string]string{}},
			{HostRequest{Holder: nbAPI, Hosts: []string{hostAPI}}, heldByNB},
			{HostRequest{Holder: nb, Hosts: []string{hostWeb, hostAPI}}, map[string]string{}},
		}},
		{name: "an existing route wins over an older newcomer", steps: []step{
			{HostRequest{Holder: nb, Hosts: []string{hostAPI}, Claims: []HostClaim{{Holder: nbAPI, Host: hostAPI}}},
				map[string]string{hostAPI: "workspace team/nb-api"}},
		}},
		{name: "a grant of the ledger wins over an older newcomer", steps: []step{
			{HostRequest{Holder: nbAPI, Hosts: []string{hostAPI}}, map[string]string{}},
			{HostRequest{Holder: nb, Hosts: []string{hostAPI}}, map[string]string{hostAPI: "workspace team/nb-api"}},
		}},
		{name: "the holder going frees the host", steps: []step{
			{HostRequest{Holder: nb, Hosts: []string{hostAPI}}, map[string]string{}},
			{HostRequest{Holder: nbAPI, Hosts: []string{hostAPI}}, heldByNB},
			{HostRequest{Holder: nbAPI, Hosts: []string{hostAPI}, Live: gone(nb)}, map[string]string{}},
			{HostRequest{Holder: cc, Hosts: []string{hostAPI}}, map[string]string{hostAPI: "workspace team/nb-api"}},
		}},
		{name: "a claim of a gone workspace holds nothing", steps: []step{
			{HostRequest{Holder: nbAPI, Hosts: []string{hostAPI}, Claims: []HostClaim{{Holder: nb, Host: hostAPI}}, Live: gone(nb)},
				map[string]string{}},
		}},
		{name: "a host the holder no longer needs is freed", steps: []step{
			{HostRequest{Holder: nb, Hosts: []string{hostWeb, hostAPI}}, map[string]string{}},
			{HostRequest{Holder: nb, Hosts: []string{hostWeb}}, map[string]string{}},
			{HostRequest{Holder: nbAPI, Hosts: []string{hostAPI}}, map[string]string{}},
		}},
		{name: "of two claims the older keeps the host", steps: []step{
			{HostRequest{Holder: nbAPI, Hosts: []string{hostAPI}, Claims: []HostClaim{{Holder: nbAPI, Host: hostAPI}, {Holder: nb, Host: hostAPI}}},
				heldByNB},
			{HostRequest{Holder: nb, Hosts: []string{hostAPI}, Claims: []HostClaim{{Holder: nbAPI, Host: hostAPI}, {Holder: nb, Host: hostAPI}}},
				map[string]string{}},
		}},
		{name: "a younger grantee yields to an older claim that turns up, and stays out", steps: []step{
			{HostRequest{Holder: nbAPI, Hosts: []string{hostAPI}}, map[string]string{}},
			{HostRequest{Holder: nbAPI, Hosts: []string{hostAPI}, Claims: []HostClaim{{Holder: nbAPI, Host: hostAPI}, {Holder: nb, Host: hostAPI}}},
				heldByNB},
			{HostRequest{Holder: cc, Hosts: []string{hostAPI}, Claims: []HostClaim{{Holder: nb, Host: hostAPI}}}, heldByNB},
		}},
		{name: "an older grantee keeps the host against a younger claim", steps: []step{
			{HostRequest{Holder: nb, Hosts: []string{hostAPI}}, map[string]string{}},
			{HostRequest{Holder: nb, Hosts: []string{hostAPI}, Claims: []HostClaim{{Holder: nbAPI, Host: hostAPI}}}, map[string]string{}},
		}},
		{name: "the UID breaks a tie of creation times", steps: []step{
			{HostRequest{Holder: twin, Hosts: []string{hostAPI}, Claims: []HostClaim{{Holder: twin, Host: hostAPI}, {Holder: nb, Host: hostAPI}}},
				heldByNB},
		}},
		{name: "a route of another writer takes the host, not the holder's own", steps: []step{
			{HostRequest{Holder: nbAPI, Hosts: []string{hostAPI}, Taken: map[string]string{hostAPI: "HTTPRoute istio-system/legacy"}},
				map[string]string{hostAPI: "HTTPRoute istio-system/legacy"}},
			{HostRequest{Holder: nb, Hosts: []string{hostAPI}, Claims: []HostClaim{{Holder: nb, Host: hostAPI}},
				Taken: map[string]string{hostAPI: "HTTPRoute istio-system/legacy"}}, map[string]string{}},
		}},
		{name: "claims of hosts not asked for are ignored", steps: []step{
			{HostRequest{Holder: nbAPI, Hosts: []string{hostAPI}, Claims: []HostClaim{{Holder: nb, Host: hostWeb}}}, map[string]string{}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			l := NewHostLedger()
			for i, s := range tt.steps {
				g.Expect(l.Claim(key, s.req)).To(Equal(s.want), "step %d", i)
			}
		})
	}
}

func TestHostLedgerHeldAndRelease(t *testing.T) {
	g := NewWithT(t)
	l := NewHostLedger()
	other := PoolKey{Cluster: types.NamespacedName{Namespace: "t", Name: "other"}, Gateway: key.Gateway}
	l.Claim(key, HostRequest{Holder: nb, Hosts: []string{hostWeb, hostAPI}})
	l.Claim(other, HostRequest{Holder: nb, Hosts: []string{hostAPI}})
	g.Expect(l.Held(key, nb.Key)).To(Equal([]string{hostAPI, hostWeb}))
	g.Expect(l.Claim(other, HostRequest{Holder: nbAPI, Hosts: []string{hostAPI}})).To(HaveKey(hostAPI), "Gateways are apart")
	g.Expect(l.Held(key, nbAPI.Key)).To(BeEmpty(), "a waiting workspace holds nothing")

	l.Release(nb.Key)
	g.Expect(l.Held(key, nb.Key)).To(BeEmpty())
	g.Expect(l.Held(other, nb.Key)).To(BeEmpty())
	g.Expect(l.Claim(key, HostRequest{Holder: nbAPI, Hosts: []string{hostAPI}})).To(BeEmpty())
	g.Expect(l.Held(key, nbAPI.Key)).To(Equal([]string{hostAPI}))
}

// TestHostLedgerOneHolder claims one host from many workers at once: one
// gets it, every other is told who holds it.
func TestHostLedgerOneHolder(t *testing.T) {
	g := NewWithT(t)
	l := NewHostLedger()
	var mu sync.Mutex
	var winners []string
	refused := map[string]bool{}
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := Claimant{Key: types.NamespacedName{Namespace: "t", Name: fmt.Sprintf("ws%d", w)}, Created: t0.Add(time.Duration(w) * time.Second)}
			got := l.Claim(key, HostRequest{Holder: c, Hosts: []string{hostAPI}})
			mu.Lock()
			defer mu.Unlock()
			if holder, ok := got[hostAPI]; ok {
				refused[holder] = true
				return
			}
			winners = append(winners, "workspace "+c.Key.String())
		}()
	}
	wg.Wait()
	g.Expect(winners).To(HaveLen(1))
	g.Expect(refused).To(Equal(map[string]bool{winners[0]: true}), "the others are told the holder")
}

// TestHostLedgersOfShardsSettle: two shards' ledgers grant one host each to
// a workspace of their own, not seeing the other's route yet. Once each
// sees both routes (the check after delivering), exactly one keeps it,
// the older, whichever order they look in.
func TestHostLedgersOfShardsSettle(t *testing.T) {
	for _, olderFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("older looks first: %v", olderFirst), func(t *testing.T) {
			g := NewWithT(t)
			a, b := NewHostLedger(), NewHostLedger()
			g.Expect(a.Claim(key, HostRequest{Holder: nb, Hosts: []string{hostAPI}})).To(BeEmpty())
			g.Expect(b.Claim(key, HostRequest{Holder: nbAPI, Hosts: []string{hostAPI}})).To(BeEmpty(), "the collision")
			both := []HostClaim{{Holder: nb, Host: hostAPI}, {Holder: nbAPI, Host: hostAPI}}
			check := []func() map[string]string{
				func() map[string]string {
					return a.Claim(key, HostRequest{Holder: nb, Hosts: []string{hostAPI}, Claims: both})
				},
				func() map[string]string {
					return b.Claim(key, HostRequest{Holder: nbAPI, Hosts: []string{hostAPI}, Claims: both})
				},
			}
			if !olderFirst {
				check[0], check[1] = check[1], check[0]
			}
			results := []map[string]string{check[0](), check[1]()}
			if !olderFirst {
				results[0], results[1] = results[1], results[0]
			}
			g.Expect(results[0]).To(BeEmpty(), "the older keeps the host")
			g.Expect(results[1]).To(Equal(map[string]string{hostAPI: "workspace team/nb"}), "the younger backs off")
			g.Expect(b.Held(key, nbAPI.Key)).To(BeEmpty())
		})
	}
}

func TestHostOf(t *testing.T) {
	g := NewWithT(t)
	for url, host := range map[string]string{
		"https://nb.example.com":       "nb.example.com",
		"http://NB.example.com:8080/x": "nb.example.com",
		"ssh://example.com:30022":      "",
		"":                             "",
		"https://":                     "",
	} {
		g.Expect(HostOf(url)).To(Equal(host), url)
	}
}
