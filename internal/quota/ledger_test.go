package quota

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/test/world"
)

// env is the control plane of the Ledger's tests (the fuzz targets of the
// package need none).
var env *testenv.Environment

func TestMain(m *testing.M) {
	world.Main(m, world.World{Name: "quota", Management: true, Bare: world.Fuzzing,
		ManagementOptions: []testenv.Option{testenv.WithoutK0rdentCRDs()}},
		func(r *world.Running) error { env = r.Management; return nil })
}

// startEnv skips a test that needs the control plane when there is none.
func startEnv(t *testing.T) {
	t.Helper()
	if env == nil {
		t.Skip("no control plane while fuzzing")
	}
}

// replica is what one Apiary process has: an informer cache for reads, and
// a Ledger over it.
func replica(t *testing.T) *Ledger {
	t.Helper()
	startEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c, err := cache.New(env.Config, cache.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}
	cl, err := client.New(env.Config, client.Options{Scheme: env.Scheme, Cache: &client.CacheOptions{Reader: c}})
	if err != nil {
		t.Fatal(err)
	}
	// Informers start on first use; make sure the quota informer runs.
	if err := cl.List(ctx, &quotav1alpha1.TenantQuotaList{}); err != nil {
		t.Fatal(err)
	}
	return &Ledger{Client: cl, Reader: env.Client}
}

func createQuota(t *testing.T, name string, hard quotav1alpha1.QuotaLimits) {
	t.Helper()
	startEnv(t)
	q := &quotav1alpha1.TenantQuota{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: quotav1alpha1.TenantQuotaSpec{Hard: hard}}
	if err := env.Client.Create(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), q) })
}

func getQuota(g Gomega, name string) *quotav1alpha1.TenantQuota {
	q := &quotav1alpha1.TenantQuota{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Name: name}, q)).To(Succeed())
	return q
}

func gpuRequest(name string, gpus int64) Request {
	return Request{Namespace: "tenant-a", Name: name, UID: types.UID("uid-" + name), GPUs: gpus, ResourceName: nv}
}

// TestTwoReplicasNeverOverBookOneQuota lets two replicas, each with its own
// cache, charge 40 workspaces of 1–3 GPUs to one 20-GPU quota from 8
// goroutines at once. What they admitted together never exceeds the quota,
// and the ledger holds exactly the admitted charges: none lost, none twice.
func TestTwoReplicasNeverOverBookOneQuota(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	createQuota(t, "shared", quotav1alpha1.QuotaLimits{GPUs: []quotav1alpha1.GPULimit{{Name: "all", ResourceName: nv, Count: 20}}})
	replicas := []*Ledger{replica(t), replica(t)}

	var mu sync.Mutex
	admitted := map[types.UID]int64{}
	refused := 0
	var wg sync.WaitGroup
	work := make(chan int)
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := replicas[w%2]
			for i := range work {
				req := gpuRequest(fmt.Sprintf("w%02d", i), int64(1+i%3))
				for attempt := 0; ; attempt++ {
					refusal, err := l.Reserve(ctx, []string{"shared"}, req)
					if err != nil && attempt < 20 {
						time.Sleep(10 * time.Millisecond) // contended: back off and try again
						continue
					}
					if err != nil {
						t.Errorf("charging %s: %v", req.Name, err)
						return
					}
					mu.Lock()
					if refusal == nil {
						admitted[req.UID] = req.GPUs
					} else {
						refused++
					}
					mu.Unlock()
					break
				}
			}
		}()
	}
	for i := range 40 {
		work <- i
	}
	close(work)
	wg.Wait()

	var total int64
	for _, n := range admitted {
		total += n
	}
	t.Logf("admitted %d workspaces holding %d GPUs, refused %d", len(admitted), total, refused)
	g.Expect(total).To(BeNumerically("<=", 20), "the replicas over-booked the quota")
	g.Expect(total).To(BeNumerically(">=", 18), "a 1–3 GPU request fits until fewer than 3 are left")
	q := getQuota(g, "shared")
	g.Expect(q.Status.Charges).To(HaveLen(len(admitted)), "one charge per admitted workspace")
	for _, c := range q.Status.Charges {
		g.Expect(admitted).To(HaveKeyWithValue(c.UID, c.GPUs))
	}
	g.Expect(q.Status.Used.GPUs).To(Equal([]quotav1alpha1.GPUUsage{{Name: "all", Count: total}}))
	g.Expect(q.Status.Summary).To(Equal(fmt.Sprintf("gpus/all: %d/20, workspaces: %d", total, len(admitted))))
}

// TestReserveIsAllOrNothingAcrossQuotas: a refusal by a second quota takes
// back the first quota's new charge, and puts back what the workspace was
// charged before.
func TestReserveIsAllOrNothingAcrossQuotas(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	createQuota(t, "a-roomy", quotav1alpha1.QuotaLimits{GPUs: []quotav1alpha1.GPULimit{{Name: "all", ResourceName: nv, Count: 100}}})
	createQuota(t, "b-tight", quotav1alpha1.QuotaLimits{GPUs: []quotav1alpha1.GPULimit{{Name: "all", ResourceName: nv, Count: 4}}})
	l := replica(t)
	names := []string{"b-tight", "a-roomy"}

	refusal, err := l.Reserve(ctx, names, gpuRequest("grow", 2))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(refusal).To(BeNil())
	refusal, err = l.Reserve(ctx, names, gpuRequest("grow", 6))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(refusal).NotTo(BeNil())
	g.Expect(refusal.Quota).To(Equal("b-tight"))
	g.Expect(refusal.Error()).To(Equal(`TenantQuota "b-tight" has no room: gpus "all": 6 requested, 0 of 4 used`))
	g.Eventually(func(g Gomega) {
		for _, name := range names {
			q := getQuota(g, name)
			g.Expect(q.Status.Charges).To(HaveLen(1))
			g.Expect(q.Status.Charges[0].GPUs).To(Equal(int64(2)), "the earlier charge stands in %s", name)
		}
	}).Should(Succeed())

	g.Expect(l.Release(ctx, names, "uid-grow")).To(Succeed())
	for _, name := range names {
		g.Expect(getQuota(g, name).Status.Charges).To(BeEmpty())
	}
	g.Expect(l.Release(ctx, []string{"gone"}, "uid-grow")).To(Succeed(), "a quota that is gone holds nothing")
	refusal, err = l.Reserve(ctx, []string{"gone"}, gpuRequest("x", 1))
	g.Expect(refusal).To(BeNil())
	g.Expect(err).NotTo(HaveOccurred())
}

// TestReserveReadsItsOwnWritesWhenTheCacheLags: charges written one after
// the other by one replica see each other even before its cache does.
func TestReserveReadsItsOwnWritesWhenTheCacheLags(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	createQuota(t, "lag", quotav1alpha1.QuotaLimits{Workspaces: ptr.To[int64](3)})
	l := replica(t)
	g.Eventually(func() error { _, err := l.read(ctx, "lag", false); return err }).Should(Succeed())
	for i := range 5 {
		refusal, err := l.Reserve(ctx, []string{"lag"}, gpuRequest(fmt.Sprintf("n%d", i), 0))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(refusal == nil).To(Equal(i < 3), "workspace %d", i)
	}
	g.Expect(getQuota(g, "lag").Status.Used.Workspaces).To(Equal(int64(3)))
}

// TestStoppedWorkspacesKeepTheirPlaceInTheCount (issue 30, item 11): a
// stopped workspace's charge is held (HoldAll): its GPUs go back, it still
// counts towards the workspaces limit, so a tenant at its limit starts no
// new workspace by stopping one, and the stopped one starts again in place.
func TestStoppedWorkspacesKeepTheirPlaceInTheCount(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	createQuota(t, "held", quotav1alpha1.QuotaLimits{Workspaces: ptr.To[int64](2),
		GPUs: []quotav1alpha1.GPULimit{{Name: "all", ResourceName: nv, Count: 4}}})
	l := replica(t)
	for _, name := range []string{"held-a", "held-b"} {
		refusal, err := l.Reserve(ctx, []string{"held"}, gpuRequest(name, 2))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(refusal).To(BeNil())
	}
	g.Expect(l.HoldAll(ctx, "uid-held-a")).To(Succeed())
	g.Eventually(func(g Gomega) {
		q := getQuota(g, "held")
		g.Expect(Usage(q.Spec.Hard, q.Status.Charges).Workspaces).To(Equal(int64(2)))
		g.Expect(Usage(q.Spec.Hard, q.Status.Charges).GPUs[0].Count).To(Equal(int64(2)), "the stopped one's GPUs went back")
	}, 10*time.Second, 50*time.Millisecond).Should(Succeed())

	refusal, err := l.Reserve(ctx, []string{"held"}, gpuRequest("held-c", 1))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(refusal).NotTo(BeNil(), "the stopped workspace still holds its place")
	g.Expect(refusal.Error()).To(ContainSubstring("workspaces"))

	refusal, err = l.Reserve(ctx, []string{"held"}, gpuRequest("held-a", 2))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(refusal).To(BeNil(), "the stopped workspace starts again in its place")
}
