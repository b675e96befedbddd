package quota

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
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

// tenantNS is the namespace of the Ledger tests' workspaces.
const tenantNS = "tenant-a"

// newWorkspace creates a workspace in tenantNS (the Ledger reads its
// records live) and returns it.
func newWorkspace(t testing.TB, name string) *workspacesv1.WorkspaceDeployment {
	t.Helper()
	ctx := context.Background()
	_ = env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNS}})
	w := &workspacesv1.WorkspaceDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: tenantNS, Name: name},
		Spec: workspacesv1.WorkspaceDeploymentSpec{WorkspaceClassRef: "c", ClusterDeploymentRef: workspacesv1.ClusterDeploymentReference{Name: "cd"}}}
	if err := env.Client.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), w) })
	return w
}

// gpuCharge is a charge of GPUs for a workspace.
func gpuCharge(w *workspacesv1.WorkspaceDeployment, gpus int64) quotav1alpha1.QuotaCharge {
	return Request{Namespace: w.Namespace, Name: w.Name, UID: w.UID, GPUs: gpus, ResourceName: nv}.Charge(metav1.Now())
}

// reconcile is what a workspace's reconciler does with the Ledger: sync
// the quotas, write the records on the workspace's status, settle.
func reconcile(ctx context.Context, l *Ledger, w *workspacesv1.WorkspaceDeployment, wants []Want, leave ...string) (*Refusal, error) {
	records, refusal, err := l.Sync(ctx, w, w.Status.QuotaCharges, wants, leave)
	if werr := writeRecords(ctx, w, records); werr != nil {
		return refusal, errors.Join(err, werr)
	}
	l.Settle(w.UID, records)
	return refusal, err
}

// writeRecords writes a workspace's quota records.
func writeRecords(ctx context.Context, w *workspacesv1.WorkspaceDeployment, records []workspacesv1.WorkspaceQuotaCharge) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &workspacesv1.WorkspaceDeployment{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), cur); err != nil {
			return err
		}
		cur.Status.QuotaCharges = records
		if err := env.Client.Status().Update(ctx, cur); err != nil {
			return err
		}
		cur.DeepCopyInto(w)
		return nil
	})
}

func checked(quota string, c quotav1alpha1.QuotaCharge) []Want {
	return []Want{{Quota: quota, Charge: c, Check: true}}
}

// TestTwoReplicasNeverOverBookOneQuota lets two replicas, each with its own
// cache, charge 40 workspaces of 1–3 GPUs to one 20-GPU quota from 8
// goroutines at once. What they admitted together never exceeds the quota,
// the totals are exactly the admitted charges, and each admitted workspace
// records its charge: none lost, none twice.
func TestTwoReplicasNeverOverBookOneQuota(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	createQuota(t, "shared", quotav1alpha1.QuotaLimits{GPUs: []quotav1alpha1.GPULimit{{Name: "all", ResourceName: nv, Count: 20}}})
	replicas := []*Ledger{replica(t), replica(t)}
	workspaces := make([]*workspacesv1.WorkspaceDeployment, 40)
	for i := range workspaces {
		workspaces[i] = newWorkspace(t, fmt.Sprintf("w%02d", i))
	}

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
				ws := workspaces[i]
				c := gpuCharge(ws, int64(1+i%3))
				for attempt := 0; ; attempt++ {
					refusal, err := reconcile(ctx, l, ws, checked("shared", c))
					if err != nil && attempt < 20 {
						time.Sleep(10 * time.Millisecond) // contended: back off and try again
						continue
					}
					if err != nil {
						t.Errorf("charging %s: %v", ws.Name, err)
						return
					}
					mu.Lock()
					if refusal == nil {
						admitted[ws.UID] = c.GPUs
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
	for _, ws := range workspaces {
		cur := &workspacesv1.WorkspaceDeployment{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ws), cur)).To(Succeed())
		c := Counted(q, RefOf(cur), cur.Status.QuotaCharges)
		if n, ok := admitted[cur.UID]; ok {
			g.Expect(c).NotTo(BeNil(), "%s is counted", cur.Name)
			g.Expect(c.GPUs).To(Equal(n))
			g.Expect(RecordOf(cur.Status.QuotaCharges, q)).NotTo(BeNil(), "%s records its charge", cur.Name)
		} else {
			g.Expect(c).To(BeNil(), "%s is not counted", cur.Name)
		}
	}
	g.Expect(q.Status.Used.GPUs).To(Equal([]quotav1alpha1.GPUUsage{{Name: "all", Count: total}}))
	g.Expect(q.Status.Used.Workspaces).To(Equal(int64(len(admitted))))
	g.Expect(q.Status.Summary).To(Equal(fmt.Sprintf("gpus/all: %d/20, workspaces: %d", total, len(admitted))))
	g.Eventually(func(g Gomega) {
		g.Expect(getQuota(g, "shared").Status.Inflight).To(BeEmpty(), "every change settled")
	}, 10*time.Second, 50*time.Millisecond).Should(Succeed())
}

// TestSyncIsAllOrNothingAcrossQuotas: a refusal by a second quota takes
// back the first quota's new charge, and puts back what the workspace was
// charged before.
func TestSyncIsAllOrNothingAcrossQuotas(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	createQuota(t, "a-roomy", quotav1alpha1.QuotaLimits{GPUs: []quotav1alpha1.GPULimit{{Name: "all", ResourceName: nv, Count: 100}}})
	createQuota(t, "b-tight", quotav1alpha1.QuotaLimits{GPUs: []quotav1alpha1.GPULimit{{Name: "all", ResourceName: nv, Count: 4}}})
	l := replica(t)
	ws := newWorkspace(t, "grow")
	both := func(gpus int64) []Want {
		c := gpuCharge(ws, gpus)
		return []Want{{Quota: "b-tight", Charge: c, Check: true}, {Quota: "a-roomy", Charge: c, Check: true}}
	}

	refusal, err := reconcile(ctx, l, ws, both(2))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(refusal).To(BeNil())
	refusal, err = reconcile(ctx, l, ws, both(6))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(refusal).NotTo(BeNil())
	g.Expect(refusal.Quota).To(Equal("b-tight"))
	g.Expect(refusal.Error()).To(Equal(`TenantQuota "b-tight" has no room: gpus "all": 6 requested, 0 of 4 used`))
	for _, name := range []string{"a-roomy", "b-tight"} {
		q := getQuota(g, name)
		g.Expect(q.Status.Used.GPUs[0].Count).To(Equal(int64(2)), "the earlier charge stands in %s", name)
		g.Expect(Counted(q, RefOf(ws), ws.Status.QuotaCharges).GPUs).To(Equal(int64(2)))
	}

	refusal, err = reconcile(ctx, l, ws, nil, "a-roomy", "b-tight")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(refusal).To(BeNil())
	for _, name := range []string{"a-roomy", "b-tight"} {
		q := getQuota(g, name)
		g.Expect(q.Status.Used.Workspaces).To(BeZero())
		g.Expect(Counted(q, RefOf(ws), ws.Status.QuotaCharges)).To(BeNil())
	}
	refusal, err = reconcile(ctx, l, ws, checked("gone", gpuCharge(ws, 1)), "gone")
	g.Expect(refusal).To(BeNil())
	g.Expect(err).NotTo(HaveOccurred(), "a quota that is gone holds nothing")
}

// TestSyncReadsItsOwnWritesWhenTheCacheLags: charges written one after
// the other by one replica see each other even before its cache does.
func TestSyncReadsItsOwnWritesWhenTheCacheLags(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	createQuota(t, "lag", quotav1alpha1.QuotaLimits{Workspaces: ptr.To[int64](3)})
	l := replica(t)
	g.Eventually(func() error { _, err := l.read(ctx, "lag", false); return err }).Should(Succeed())
	for i := range 5 {
		ws := newWorkspace(t, fmt.Sprintf("n%d", i))
		refusal, err := reconcile(ctx, l, ws, checked("lag", gpuCharge(ws, 0)))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(refusal == nil).To(Equal(i < 3), "workspace %d", i)
	}
	g.Expect(getQuota(g, "lag").Status.Used.Workspaces).To(Equal(int64(3)))
}

// TestStoppedWorkspacesKeepTheirPlaceInTheCount (issue 30, item 11): a
// stopped workspace's charge is held: its GPUs go back, it still counts
// towards the workspaces limit, so a tenant at its limit starts no new
// workspace by stopping one, and the stopped one starts again in place.
func TestStoppedWorkspacesKeepTheirPlaceInTheCount(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	createQuota(t, "held", quotav1alpha1.QuotaLimits{Workspaces: ptr.To[int64](2),
		GPUs: []quotav1alpha1.GPULimit{{Name: "all", ResourceName: nv, Count: 4}}})
	l := replica(t)
	a, b, c := newWorkspace(t, "held-a"), newWorkspace(t, "held-b"), newWorkspace(t, "held-c")
	for _, ws := range []*workspacesv1.WorkspaceDeployment{a, b} {
		refusal, err := reconcile(ctx, l, ws, checked("held", gpuCharge(ws, 2)))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(refusal).To(BeNil())
	}
	_, err := reconcile(ctx, l, a, []Want{{Quota: "held", Charge: Held(gpuCharge(a, 2))}})
	g.Expect(err).NotTo(HaveOccurred())
	q := getQuota(g, "held")
	g.Expect(q.Status.Used.Workspaces).To(Equal(int64(2)))
	g.Expect(q.Status.Used.GPUs[0].Count).To(Equal(int64(2)), "the stopped one's GPUs went back")
	g.Expect(RecordOf(a.Status.QuotaCharges, q).GPUs).To(BeZero())

	refusal, err := reconcile(ctx, l, c, checked("held", gpuCharge(c, 1)))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(refusal).NotTo(BeNil(), "the stopped workspace still holds its place")
	g.Expect(refusal.Error()).To(ContainSubstring("workspaces"))

	refusal, err = reconcile(ctx, l, a, checked("held", gpuCharge(a, 2)))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(refusal).To(BeNil(), "the stopped workspace starts again in its place")
}
