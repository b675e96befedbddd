package quota

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
)

// bodySizes records the size of each request body that writes a
// TenantQuota's status.
type bodySizes struct {
	mu    sync.Mutex
	sizes []int64
}

func (b *bodySizes) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		if req.Method == http.MethodPut && strings.Contains(req.URL.Path, "/tenantquotas/") && strings.HasSuffix(req.URL.Path, "/status") {
			b.mu.Lock()
			b.sizes = append(b.sizes, req.ContentLength)
			b.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

func (b *bodySizes) take() []int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := b.sizes
	b.sizes = nil
	return out
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// measuredLedger is a Ledger whose quota writes are measured.
func measuredLedger(t testing.TB) (*Ledger, *bodySizes) {
	sizes := &bodySizes{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WrapTransport = sizes.wrap
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return &Ledger{Client: c, Reader: env.Client}, sizes
}

// tenantOf writes a quota whose totals say it counts n admitted
// workspaces of 1 GPU each (their records are on the workspaces, which
// the quota never reads).
func tenantOf(t testing.TB, g Gomega, name string, n int64) {
	ctx := context.Background()
	q := &quotav1alpha1.TenantQuota{}
	q.Name = name
	q.Spec.Hard = quotav1alpha1.QuotaLimits{Workspaces: ptr.To[int64](30000),
		GPUs: []quotav1alpha1.GPULimit{{Name: "all", ResourceName: nv, Count: 40000}}}
	g.Expect(env.Client.Create(ctx, q)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), q) })
	q.Status.Totals = true
	q.Status.Hard = q.Spec.Hard
	q.Status.Used = quotav1alpha1.QuotaUsage{Workspaces: n, GPUs: []quotav1alpha1.GPUUsage{{Name: "all", Count: n}}}
	g.Expect(env.Client.Status().Update(ctx, q)).To(Succeed())
}

// TestAdmissionWriteIsIndependentOfTheTenantsSize: admitting a workspace
// into a tenant of 20,000 admitted workspaces writes a quota status of the
// same size as into a tenant of 100 (the digits of the totals aside), and
// the quota stays a few kilobytes: what grew with the tenant before (one
// charge per workspace, ~267 bytes each: etcd's 1.5 MiB at ~5,900) is on
// the workspaces.
func TestAdmissionWriteIsIndependentOfTheTenantsSize(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	l, sizes := measuredLedger(t)
	written := map[int64][]int64{}
	objects := map[int64]int{}
	for _, n := range []int64{100, 5000, 20000} {
		name := fmt.Sprintf("size-%d", n)
		tenantOf(t, g, name, n)
		ws := newWorkspace(t, name)
		refusal, err := reconcile(ctx, l, ws, checked(name, gpuCharge(ws, 1)))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(refusal).To(BeNil())
		l.flush() // the settle: the entry leaves the quota
		written[n] = sizes.take()
		q := getQuota(g, name)
		g.Expect(q.Status.Used.Workspaces).To(Equal(n + 1))
		g.Expect(q.Status.Inflight).To(BeEmpty())
		raw, err := json.Marshal(q)
		g.Expect(err).NotTo(HaveOccurred())
		objects[n] = len(raw)
	}
	t.Logf("quota status writes per admission (bytes): %v; quota object after (bytes): %v", written, objects)
	for _, n := range []int64{5000, 20000} {
		g.Expect(written[n]).To(HaveLen(len(written[100])), "as many writes for %d as for 100", n)
		for i := range written[n] {
			g.Expect(written[n][i]-written[100][i]).To(BeNumerically("<=", 16), "write %d for %d workspaces vs 100", i, n)
		}
		g.Expect(objects[n] - objects[100]).To(BeNumerically("<=", 16))
	}
	g.Expect(objects[20000]).To(BeNumerically("<", 4096), "a quota of 20,000 workspaces is a few kilobytes")
}

// BenchmarkAdmissionWrite admits and releases a workspace against a quota
// counting 100 or 20,000 admitted workspaces: the bytes of quota status
// written per admission and the time of an admission (sync, record,
// settle). Not run in CI:
//
//	go test ./internal/quota -run '^$' -bench BenchmarkAdmissionWrite -benchtime 200x
func BenchmarkAdmissionWrite(b *testing.B) {
	for _, n := range []int64{100, 20000} {
		b.Run(fmt.Sprintf("tenant=%d", n), func(b *testing.B) {
			g := NewWithT(b)
			ctx := context.Background()
			l, sizes := measuredLedger(b)
			name := fmt.Sprintf("bench-%d", n)
			tenantOf(b, g, name, n)
			ws := newWorkspace(b, name)
			var bytes, writes int64
			b.ResetTimer()
			for range b.N {
				if _, err := reconcile(ctx, l, ws, checked(name, gpuCharge(ws, 1))); err != nil {
					b.Fatal(err)
				}
				l.flush()
				b.StopTimer()
				for _, s := range sizes.take() {
					bytes += s
					writes++
				}
				if _, err := reconcile(ctx, l, ws, nil, name); err != nil {
					b.Fatal(err)
				}
				l.flush()
				sizes.take()
				b.StartTimer()
			}
			b.ReportMetric(float64(bytes)/float64(b.N), "quota-B/admission")
			b.ReportMetric(float64(writes)/float64(b.N), "quota-writes/admission")
		})
	}
}
