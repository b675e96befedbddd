package childcluster

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

// informerRequests counts the list and watch requests of Nodes and Pods a
// child API server sees, by the cluster RequestCluster names.
type informerRequests struct {
	mu     sync.Mutex
	counts map[string]int // "<cluster> <LIST|WATCH> <resource>"
	// untagged counts node and pod requests without a cluster.
	untagged int
}

func (r *informerRequests) parse(data []byte) (*rest.Config, error) {
	cfg, err := RESTConfigFromKubeconfig(data)
	if err != nil {
		return nil, err
	}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			r.record(req)
			return rt.RoundTrip(req)
		})
	})
	return cfg, nil
}

func (r *informerRequests) record(req *http.Request) {
	path := strings.TrimSuffix(req.URL.Path, "/")
	var resource string
	switch {
	case strings.HasSuffix(path, "/api/v1/nodes"):
		resource = "nodes"
	case strings.HasSuffix(path, "/api/v1/pods"):
		resource = "pods"
	default:
		return
	}
	verb := "LIST"
	if req.URL.Query().Get("watch") == "true" {
		verb = "WATCH"
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	cd, ok := RequestCluster(req.Context())
	if !ok {
		r.untagged++
		return
	}
	if r.counts == nil {
		r.counts = map[string]int{}
	}
	r.counts[fmt.Sprintf("%s %s %s", cd, verb, resource)]++
}

// of returns the counts of cd's requests, by "<LIST|WATCH> <resource>".
func (r *informerRequests) of(cd types.NamespacedName) map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for k, n := range r.counts {
		if rest, ok := strings.CutPrefix(k, cd.String()+" "); ok {
			out[rest] = n
		}
	}
	return out
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// TestOwnersComingAndGoingShareOneListAndWatch: a workspace's GPU gate
// releases the cache when it is admitted, and the next one comes back to it
// within IdleTimeout: it finds the same cache and its Pod informer running,
// and the child sees no new list or watch. Every request of the informers
// names its cluster (RequestCluster). After IdleTimeout without owner the
// cache stops.
func TestOwnersComingAndGoingShareOneListAndWatch(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	reqs := &informerRequests{}
	const idle = 2 * time.Second
	m := newManager(t, Options{IdleTimeout: idle, NewRESTConfig: reqs.parse})
	gate := WatchOptions{Nodes: true, Pods: true} // the GPU gate's
	cd := newCluster(t)
	writeKubeconfig(t, cd, kubeconfigs[0])
	g.Expect(m.Running(cd)).To(BeNil(), "Running starts nothing")

	first, err := m.Watch(ctx, cd, "workspace/ns/a", gate)
	g.Expect(err).NotTo(HaveOccurred())
	opened := reqs.of(cd)
	for _, resource := range []string{"nodes", "pods"} {
		// One list and one watch, or one watch streaming the list
		// (client-go's WatchListClient).
		n := opened["LIST "+resource] + opened["WATCH "+resource]
		g.Expect(n).To(BeNumerically("~", 1, 1), "%s: %v", resource, opened)
		g.Expect(opened).To(HaveKeyWithValue("WATCH "+resource, 1))
	}
	m.Release(cd, "workspace/ns/a")
	g.Expect(m.Owners(cd)).To(BeEmpty())
	g.Expect(m.Running(cd)).To(BeIdenticalTo(first), "an idle cache keeps running")
	_, err = first.ListPods(ctx)
	g.Expect(err).NotTo(HaveOccurred(), "and so does its Pod informer")

	for i := range 5 {
		owner := fmt.Sprintf("workspace/ns/w%d", i)
		cc, err := m.Watch(ctx, cd, owner, gate)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cc).To(BeIdenticalTo(first), "the cluster's cache is not restarted between owners")
		_, err = cc.ListPods(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		m.Release(cd, owner)
	}
	g.Expect(reqs.of(cd)).To(Equal(opened), "no list or watch for owners that come back")
	g.Expect(reqs.untagged).To(BeZero(), "every informer request names its cluster")

	g.Eventually(first.Synced, idle+eventually).Should(BeFalse(), "the cache stops after IdleTimeout without owner")
	_, err = first.ListNodes(ctx)
	g.Expect(err).To(MatchError(ErrCacheStopped))
	g.Expect(m.Running(cd)).To(BeNil())
	g.Expect(m.States()).NotTo(ContainElement(HaveField("Cluster", cd)))
}

// TestIdlePodInformerStopsAfterIdleTimeout: the Pod informer outlives its
// last user by IdleTimeout while the cache's Node informer stays with its
// owner; an owner asking for Pods again within it cancels the stop.
func TestIdlePodInformerStopsAfterIdleTimeout(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const idle = 2 * time.Second
	m := newManager(t, Options{IdleTimeout: idle})
	cd := newCluster(t)
	writeKubeconfig(t, cd, kubeconfigs[0])

	cc, err := m.Watch(ctx, cd, "colony/ns/c")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = m.Watch(ctx, cd, "workspace/ns/w", WatchOptions{Pods: true})
	g.Expect(err).NotTo(HaveOccurred())
	m.Release(cd, "workspace/ns/w")
	time.Sleep(idle / 2)
	_, err = m.Watch(ctx, cd, "workspace/ns/v", WatchOptions{Pods: true})
	g.Expect(err).NotTo(HaveOccurred())
	time.Sleep(idle)
	_, err = cc.ListPods(ctx)
	g.Expect(err).NotTo(HaveOccurred(), "an owner came back: the stop was cancelled")

	m.Release(cd, "workspace/ns/v")
	g.Eventually(func() error { _, err := cc.ListPods(ctx); return err }, idle+eventually).Should(MatchError(ErrPodsNotWatched))
	_, err = cc.ListNodes(ctx)
	g.Expect(err).NotTo(HaveOccurred(), "the colony still reads nodes")
	g.Expect(m.Running(cd)).To(BeIdenticalTo(cc))

	m.Forget(cd)
	g.Expect(cc.Synced()).To(BeFalse(), "Forget stops at once")
	g.Expect(m.Running(cd)).To(BeNil())
}

// TestEachKindIsWatchedOnlyWhenAsked: an owner asking for Pods (a stopped
// workspace) or for Gateways (routes) opens no Node informer; the Node
// informer starts for the first owner that asks for Nodes, in the same cache.
func TestEachKindIsWatchedOnlyWhenAsked(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	reqs := &informerRequests{}
	m := newManager(t, Options{NewRESTConfig: reqs.parse})
	cd := newCluster(t)
	writeKubeconfig(t, cd, kubeconfigs[0])

	cc, err := m.Watch(ctx, cd, "workspace/ns/stopped", WatchOptions{Pods: true})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = cc.ListPods(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = cc.ListNodes(ctx)
	g.Expect(err).To(MatchError(ErrNodesNotWatched))
	_, err = m.Watch(ctx, cd, "routes/ns/w", WatchOptions{Gateways: true})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(reqs.of(cd)).NotTo(HaveKey(ContainSubstring("nodes")), "no Node list or watch: %v", reqs.of(cd))
	g.Expect(reqs.of(cd)).To(HaveKeyWithValue("WATCH pods", 1))

	again, err := m.Watch(ctx, cd, "colony/ns/c")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(BeIdenticalTo(cc))
	_, err = cc.ListNodes(ctx)
	g.Expect(err).NotTo(HaveOccurred(), "an owner without options watches Nodes")
	g.Expect(reqs.of(cd)).To(HaveKeyWithValue("WATCH nodes", 1))
	g.Expect(reqs.of(cd)).To(HaveKeyWithValue("WATCH pods", 1))
}

// TestInformersFollowTheirOwners (property): after any sequence of owners
// watching with random options and releasing, the cache runs exactly the
// informers its owners need when IdleTimeout is negative, and at least
// those otherwise — then a cluster never sees a second watch of a kind.
func TestInformersFollowTheirOwners(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	for _, idle := range []time.Duration{stopAtOnce, time.Hour} {
		t.Run(fmt.Sprintf("idle %s", idle), func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			rng := rand.New(rand.NewPCG(seed, uint64(idle)))
			reqs := &informerRequests{}
			m := newManager(t, Options{IdleTimeout: idle, NewRESTConfig: reqs.parse})
			cd := newCluster(t)
			writeKubeconfig(t, cd, kubeconfigs[0])
			owners := map[string]WatchOptions{}
			for step := range 40 {
				owner := fmt.Sprintf("workspace/ns/w%d", rng.IntN(4))
				if rng.IntN(3) == 0 {
					m.Release(cd, owner)
					delete(owners, owner)
				} else {
					opts := WatchOptions{Nodes: rng.IntN(2) == 0, Pods: rng.IntN(2) == 0}
					_, err := m.Watch(ctx, cd, owner, opts)
					g.Expect(err).NotTo(HaveOccurred())
					if opts == (WatchOptions{}) {
						opts.Nodes = true
					}
					owners[owner] = opts
				}
				var all []WatchOptions
				for _, o := range owners {
					all = append(all, o)
				}
				need := union(all...)
				cc := m.Running(cd)
				if len(owners) == 0 && idle < 0 {
					g.Expect(cc).To(BeNil(), "step %d: no owner, no cache", step)
					continue
				}
				if len(owners) == 0 && cc == nil {
					continue
				}
				g.Expect(cc).NotTo(BeNil(), "step %d", step)
				runs := WatchOptions{Nodes: cc.runs(partNodes), Pods: cc.runs(partPods)}
				if idle < 0 {
					g.Expect(runs).To(Equal(need), "step %d: owners %v", step, owners)
				} else {
					g.Expect(union(runs, need)).To(Equal(runs), "step %d: owners %v", step, owners)
				}
			}
			if idle > 0 {
				for k, n := range reqs.of(cd) {
					g.Expect(n).To(BeNumerically("<=", 1), "%s: one per cluster at most", k)
				}
			}
		})
	}
}
