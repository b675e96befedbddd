package delivery

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/test/world"
)

var (
	env *testenv.Environment
	// mgr is a running manager whose client reads from informer caches;
	// every request it makes goes through requests.
	mgr      ctrl.Manager
	requests = &requestLog{}
)

func TestMain(m *testing.M) {
	ctrl.SetLogger(logr.Discard())
	// Fuzzing runs the pure fuzz targets in many worker processes; the tests
	// that need an API server skip themselves. Flux's CRDs are for the Git
	// sink's reads of a Kustomization.
	world.Main(m, world.World{Name: "delivery", Management: true, Flux: true, Bare: world.Fuzzing}, startManager)
}

// startManager keeps the world's management cluster in env and starts mgr
// on it, its requests recorded, until the world stops.
func startManager(r *world.Running) error {
	env = r.Management
	cfg := rest.CopyConfig(env.Config)
	cfg.Wrap(requests.wrap)
	var err error
	mgr, err = ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 env.Scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}
	ctx, cancel := context.WithCancel(r.Context())
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "running manager: %v\n", err)
		}
	}()
	r.Defer(func() { cancel(); <-stopped })
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		return fmt.Errorf("manager caches did not sync")
	}
	return nil
}

// requestLog records the API requests of the manager's client and caches.
type requestLog struct {
	mu   sync.Mutex
	reqs []string
}

func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		l.mu.Lock()
		l.reqs = append(l.reqs, req.Method+" "+req.URL.Path+"?"+req.URL.RawQuery)
		l.mu.Unlock()
		return rt.RoundTrip(req)
	})
}

// during returns the requests made while f ran.
func (l *requestLog) during(f func()) []string {
	l.mu.Lock()
	start := len(l.reqs)
	l.mu.Unlock()
	f()
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.reqs[start:]...)
}

// writes returns the requests that are not reads.
func writes(reqs []string) []string {
	var out []string
	for _, r := range reqs {
		if len(r) < 4 || r[:4] != "GET " {
			out = append(out, r)
		}
	}
	return out
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// setup skips t when there is no API server and otherwise returns a
// namespace for t, an owner in it and a direct sink.
func setup(t testing.TB, prefix string) (context.Context, string, Owner, *Direct) {
	t.Helper()
	if env == nil {
		t.Skip("no API server while fuzzing")
	}
	ns := env.NewNamespace(t, prefix)
	return context.Background(), ns, testOwner(ns, "colony-a"), newDirect()
}

// newDirect returns a direct sink on the manager's cached client.
func newDirect() *Direct {
	return NewDirect(mgr.GetClient(), mgr.GetAPIReader(), DirectOptions{})
}

// testOwner returns an owner for one test.
func testOwner(ns, name string) Owner {
	return Owner{Kind: "Colony", Namespace: ns, Name: name, UID: types.UID(rand.String(8))}
}

// configMap returns a desired ConfigMap.
func configMap(ns, name string, data map[string]string) *unstructured.Unstructured {
	d := map[string]any{}
	for k, v := range data {
		d[k] = v
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"data":     d,
	}}
}

// mustDecode decodes YAML objects with NAMESPACE replaced by ns.
func mustDecode(t testing.TB, ns, yaml string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := testenv.DecodeObjects([]byte(strings.ReplaceAll(yaml, "NAMESPACE", ns)))
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// live reads an object from the API server, bypassing the cache.
func live(t testing.TB, obj *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(obj.GroupVersionKind())
	err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), u)
	return u, err
}

// waitCached waits until the manager's cache holds the API server's current
// version of every object (or knows it is gone).
func waitCached(t testing.TB, objs ...*unstructured.Unstructured) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	for _, o := range objs {
		g.Eventually(func(g Gomega) {
			want, err := live(t, o)
			cached, cerr := newDirect().getLive(ctx, o.GroupVersionKind(), client.ObjectKeyFromObject(o))
			g.Expect(cerr).NotTo(HaveOccurred())
			if err != nil {
				g.Expect(client.IgnoreNotFound(err)).NotTo(HaveOccurred())
				g.Expect(cached).To(BeNil())
				return
			}
			g.Expect(cached).NotTo(BeNil())
			g.Expect(cached.GetResourceVersion()).To(Equal(want.GetResourceVersion()))
		}).WithTimeout(20 * time.Second).Should(Succeed())
	}
}

// ids returns the sorted IDs of an inventory.
func ids(r *Result) []string {
	var out []string
	if r != nil && r.Inventory != nil {
		for _, e := range r.Inventory.Entries {
			out = append(out, e.ID)
		}
	}
	sort.Strings(out)
	return out
}
