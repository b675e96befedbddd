package quota

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/usage"
)

// process is one Apiary process as the property tests run it: a Ledger
// over a cache, that dies (kill -9) before a quota write with probability
// p, or between the writes of a workspace's reconcile. A process that died
// is started again from scratch: a new Ledger, which knows only what the
// API server holds.
type process struct {
	t     *testing.T
	clock clock.PassiveClock
	cache client.Client
	rng   *rand.Rand
	p     float64
	l     *Ledger
	died  int
}

func newProcess(t *testing.T, cache client.Client, seed uint64, p float64) *process {
	pr := &process{t: t, cache: cache, rng: rand.New(rand.NewPCG(seed, 7)), p: p}
	pr.restart()
	return pr
}

func (pr *process) restart() {
	pr.l = &Ledger{Client: pr.cache, Reader: env.Client, SettleAfter: time.Hour, Clock: pr.clock,
		dies: func() bool { return pr.rng.Float64() < pr.p }}
}

func (pr *process) dies() bool { return pr.rng.Float64() < pr.p }

// reconcile is a workspace's reconcile on the process: sync, write the
// records, settle (at once, or with the process's next write); the process
// may die between any two of them, and then starts again.
func (pr *process) reconcile(ctx context.Context, w *workspacesv1.WorkspaceDeployment, wants []Want, leave []string) (*Refusal, bool) {
	records, refusal, err := pr.l.Sync(ctx, w, w.Status.QuotaCharges, wants, leave)
	if err != nil || pr.dies() {
		pr.died++
		pr.restart()
		return nil, false
	}
	if err := writeRecords(ctx, w, records); err != nil {
		pr.t.Errorf("writing the records of %s: %v", w.Name, err)
		return nil, false
	}
	pr.l.Settle(w.UID, records)
	if pr.dies() {
		pr.died++
		pr.restart()
		return refusal, true
	}
	if pr.rng.IntN(3) == 0 {
		pr.l.flush()
	}
	return refusal, true
}

// propertyQuotas are the two quotas of a tenant the property tests admit
// against: one on all GPUs and the workspace count, one on H100s.
var propertyQuotas = []string{"prop-all", "prop-h100"}

func createPropertyQuotas(t *testing.T) {
	createQuota(t, "prop-all", quotav1alpha1.QuotaLimits{Workspaces: ptr.To[int64](6),
		GPUs: []quotav1alpha1.GPULimit{{Name: "all", ResourceName: nv, Count: 10}}})
	createQuota(t, "prop-h100", quotav1alpha1.QuotaLimits{
		GPUs: []quotav1alpha1.GPULimit{{Name: "h100", ResourceName: nv, GPUModel: "H100", Count: 4}}})
}

// randomOp is what a workspace's reconcile wants of the quotas: a checked
// admission of 0–3 GPUs (H100 or any), a stop (held, when it is counted),
// or a release (deleted, or no longer selected).
func randomOp(rng *rand.Rand, w *workspacesv1.WorkspaceDeployment) ([]Want, []string) {
	switch rng.IntN(6) {
	case 0:
		return nil, propertyQuotas
	case 1:
		// A stop holds a place it has: unchecked, as the controller holds
		// it, so only where the quota counts the workspace now.
		var wants []Want
		for _, name := range propertyQuotas {
			q := &quotav1alpha1.TenantQuota{}
			if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, q); err != nil ||
				Counted(q, RefOf(w), w.Status.QuotaCharges) == nil {
				return nil, nil
			}
			wants = append(wants, Want{Quota: name, Charge: Held(quotav1alpha1.QuotaCharge{Namespace: w.Namespace, Name: w.Name, UID: w.UID})})
		}
		return wants, nil
	default:
		c := gpuCharge(w, int64(rng.IntN(4)))
		if rng.IntN(2) == 0 {
			c.Selector = h100
		}
		return []Want{{Quota: "prop-all", Charge: c, Check: true}, {Quota: "prop-h100", Charge: c, Check: true}}, nil
	}
}

// expectExact: each quota's totals are exactly what it counts of every
// workspace (Counted: its change in flight, else its record), and never
// above hard (every growth was checked).
func expectExact(g Gomega, workspaces []*workspacesv1.WorkspaceDeployment) {
	ctx := context.Background()
	live := make([]*workspacesv1.WorkspaceDeployment, len(workspaces))
	for i, w := range workspaces {
		live[i] = &workspacesv1.WorkspaceDeployment{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(w), live[i])).To(Succeed())
	}
	for _, name := range propertyQuotas {
		q := getQuota(g, name)
		var counted []quotav1alpha1.QuotaCharge
		for _, w := range live {
			if c := Counted(q, RefOf(w), w.Status.QuotaCharges); c != nil {
				counted = append(counted, *c)
			}
		}
		want := totalsOf(q.Status.Hard, counted).usage(q.Status.Hard)
		g.Expect(q.Status.Used.Workspaces).To(Equal(want.Workspaces), "%s: workspaces", name)
		g.Expect(q.Status.Used.GPUs).To(Equal(want.GPUs), "%s: GPUs", name)
		expectWithinHard(g, q)
	}
}

// elapse lets time pass: the model's usage of each quota grows by what the
// quota counts of every workspace now, over d.
func elapse(g Gomega, clk *clocktesting.FakePassiveClock, workspaces []*workspacesv1.WorkspaceDeployment,
	used map[string]*commonv1.ResourceUsage, d time.Duration) {
	now := clk.Now()
	for _, name := range propertyQuotas {
		q := getQuota(g, name)
		if used[name] == nil {
			used[name] = &commonv1.ResourceUsage{}
		}
		for _, w := range liveWorkspaces(g, workspaces) {
			if c := Counted(q, RefOf(w), w.Status.QuotaCharges); c != nil {
				usage.Add(used[name], RateOf(*c).Over(now, now.Add(d)))
			}
		}
	}
	clk.SetTime(now.Add(d))
}

// expectUsage: what a quota has counted of its usage and what it counts
// now from each charge's start is the usage the model saw pass, to the
// GPU-second, whatever the kills: nothing lost, nothing counted twice.
func expectUsage(g Gomega, workspaces []*workspacesv1.WorkspaceDeployment, used map[string]*commonv1.ResourceUsage, now time.Time) {
	for _, name := range propertyQuotas {
		q := getQuota(g, name)
		var held []usage.Held
		for _, w := range liveWorkspaces(g, workspaces) {
			if c := Counted(q, RefOf(w), w.Status.QuotaCharges); c != nil {
				held = append(held, usage.Held{Rate: RateOf(*c), Since: c.ChargedAt.Time})
			}
		}
		got := usage.Now(q.Status.Usage, held, now)
		g.Expect(gpuSeconds(got)).To(Equal(gpuSeconds(*used[name])), "%s: GPU-seconds", name)
	}
}

func gpuSeconds(u commonv1.ResourceUsage) map[string]int64 {
	m := map[string]int64{}
	for _, e := range u.GPUs {
		m[e.ResourceName+"/"+e.Model] += e.Seconds
	}
	return m
}

func liveWorkspaces(g Gomega, workspaces []*workspacesv1.WorkspaceDeployment) []*workspacesv1.WorkspaceDeployment {
	live := make([]*workspacesv1.WorkspaceDeployment, len(workspaces))
	for i, w := range workspaces {
		live[i] = &workspacesv1.WorkspaceDeployment{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(w), live[i])).To(Succeed())
	}
	return live
}

func expectWithinHard(g Gomega, q *quotav1alpha1.TenantQuota) {
	if h := q.Spec.Hard.Workspaces; h != nil {
		g.Expect(q.Status.Used.Workspaces).To(BeNumerically("<=", *h), "%s: over its workspaces", q.Name)
	}
	for i, l := range q.Spec.Hard.GPUs {
		if i >= len(q.Status.Used.GPUs) {
			continue // never written: nothing counted
		}
		g.Expect(q.Status.Used.GPUs[i].Count).To(BeNumerically("<=", l.Count), "%s: over %s", q.Name, l.Name)
	}
}

// settleAll reconciles every workspace once more on a process that does
// not die, flushes, and expects every change settled: the totals are the
// sums of the workspaces' records, nothing in flight.
func settleAll(t *testing.T, g Gomega, cache client.Client, workspaces []*workspacesv1.WorkspaceDeployment) {
	ctx := context.Background()
	calm := newProcess(t, cache, 99, 0)
	for _, w := range workspaces {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(w), w)).To(Succeed())
		var wants []Want
		var leave []string
		for _, name := range propertyQuotas {
			if c := Counted(getQuota(g, name), RefOf(w), w.Status.QuotaCharges); c != nil {
				wants = append(wants, Want{Quota: name, Charge: *c})
			} else {
				leave = append(leave, name)
			}
		}
		_, ok := calm.reconcile(ctx, w, wants, leave)
		g.Expect(ok).To(BeTrue())
	}
	calm.l.flush()
	for _, name := range propertyQuotas {
		g.Expect(getQuota(g, name).Status.Inflight).To(BeEmpty(), "%s: every change settled", name)
	}
	expectExact(g, workspaces)
}

// TestPropertyKillAtAnyWriteNeverLosesOrDoubleCounts runs random
// sequences of admissions, resizes, stops and releases of 8 workspaces
// against two quotas, killing the process before any quota write and
// between the writes of a reconcile (p = 0.2 each), and restarting it from
// scratch. After every step a quota's totals are exactly what it counts
// of every workspace and within hard; once every workspace reconciled
// again, nothing is in flight and the totals are the sums of the records.
func TestPropertyKillAtAnyWriteNeverLosesOrDoubleCounts(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	createPropertyQuotas(t)
	cache := replica(t).Client
	workspaces := make([]*workspacesv1.WorkspaceDeployment, 8)
	for i := range workspaces {
		workspaces[i] = newWorkspace(t, fmt.Sprintf("prop-%d", i))
	}
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC))
	used := map[string]*commonv1.ResourceUsage{}
	for seed := range uint64(2) {
		pr := newProcess(t, cache, seed, 0.2)
		pr.clock = clk
		pr.restart()
		for step := range 50 {
			w := workspaces[pr.rng.IntN(len(workspaces))]
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(w), w)).To(Succeed())
			elapse(g, clk, workspaces, used, time.Duration(1+pr.rng.IntN(3600))*time.Second)
			wants, leave := randomOp(pr.rng, w)
			pr.reconcile(ctx, w, wants, leave)
			expectExact(g, workspaces)
			expectUsage(g, workspaces, used, clk.Now())
			_ = step
		}
		t.Logf("seed %d: the process died %d times; GPU-seconds counted %v", seed, pr.died, gpuSeconds(*used["prop-all"]))
		settleAll(t, g, cache, workspaces)
	}
	g.Expect(usage.GPUSecondsOf(*used["prop-all"], nv)).To(BeNumerically(">", 0), "the sequences held GPUs for a while")
}

// TestPropertyConcurrentWritersWithKills: eight processes (two caches),
// each reconciling its own workspaces (one writer per workspace, as a
// controller's queue guarantees) against the same two quotas at once,
// conflicting on them, dying and restarting. No quota is ever above hard;
// once settled, the totals are the sums of the records.
func TestPropertyConcurrentWritersWithKills(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	createPropertyQuotas(t)
	caches := []client.Client{replica(t).Client, replica(t).Client}
	workspaces := make([]*workspacesv1.WorkspaceDeployment, 16)
	for i := range workspaces {
		workspaces[i] = newWorkspace(t, fmt.Sprintf("conc-%d", i))
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	died := 0
	for p := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pr := newProcess(t, caches[p%2], uint64(100+p), 0.15)
			mine := workspaces[2*p : 2*p+2]
			for range 25 {
				w := mine[pr.rng.IntN(2)]
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
					t.Error(err)
					return
				}
				wants, leave := randomOp(pr.rng, w)
				pr.reconcile(ctx, w, wants, leave)
				for _, name := range propertyQuotas {
					q := &quotav1alpha1.TenantQuota{}
					if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, q); err == nil {
						gg := NewGomega(func(message string, _ ...int) { t.Error(message) })
						expectWithinHard(gg, q)
					}
				}
			}
			mu.Lock()
			died += pr.died
			mu.Unlock()
		}()
	}
	wg.Wait()
	t.Logf("the processes died %d times", died)
	settleAll(t, g, caches[0], workspaces)
}

// TestMigrationMovesEveryChargeOntoItsWorkspace: a quota an earlier Apiary
// wrote (status.charges, used derived from them) converts without losing a
// charge: its totals are the charges' sums from the first write, and each
// workspace's reconcile moves its own charge onto its status, even when the
// process dies on the way; at the end the list is empty, the totals
// unchanged, and each workspace records its charge.
func TestMigrationMovesEveryChargeOntoItsWorkspace(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	createQuota(t, "legacy", quotav1alpha1.QuotaLimits{Workspaces: ptr.To[int64](10),
		GPUs: []quotav1alpha1.GPULimit{{Name: "all", ResourceName: nv, Count: 20}}})
	cache := replica(t).Client
	var workspaces []*workspacesv1.WorkspaceDeployment
	var charges []quotav1alpha1.QuotaCharge
	for i := range 6 {
		w := newWorkspace(t, fmt.Sprintf("legacy-%d", i))
		workspaces = append(workspaces, w)
		c := gpuCharge(w, int64(i%4))
		if i == 5 {
			c = Held(c) // stopped: its place in the count
		}
		charges = Upsert(charges, c)
	}
	// As the previous version wrote it.
	q := getQuota(g, "legacy")
	q.Status.Charges = charges
	q.Status.Hard = q.Spec.Hard
	q.Status.Used = Usage(q.Spec.Hard, charges)
	g.Expect(env.Client.Status().Update(ctx, q)).To(Succeed())
	before := getQuota(g, "legacy").Status.Used
	g.Expect(before.Workspaces).To(Equal(int64(6)))

	pr := newProcess(t, cache, 5, 0.3)
	for pending := 1; pending > 0; {
		pending = 0
		for i, w := range workspaces {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(w), w)).To(Succeed())
			c := charges[i]
			for _, o := range charges {
				if o.UID == w.UID {
					c = o
				}
			}
			if cur := getQuota(g, "legacy"); Find(cur.Status.Charges, w.UID) != nil || FindInflight(cur, w.UID) != nil {
				pending++
				pr.reconcile(ctx, w, []Want{{Quota: "legacy", Charge: c}}, nil) // as keepQuotas: it runs already
			}
		}
		pr.l.flush()
	}
	t.Logf("the process died %d times", pr.died)
	after := getQuota(g, "legacy")
	g.Expect(after.Status.Charges).To(BeEmpty(), "every charge moved")
	g.Expect(after.Status.Inflight).To(BeEmpty())
	g.Expect(after.Status.Totals).To(BeTrue())
	g.Expect(after.Status.Used.Workspaces).To(Equal(before.Workspaces))
	g.Expect(after.Status.Used.GPUs).To(Equal(before.GPUs))
	for _, w := range workspaces {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(w), w)).To(Succeed())
		r := RecordOf(w.Status.QuotaCharges, after)
		g.Expect(r).NotTo(BeNil(), "%s records its charge", w.Name)
		g.Expect(r.GPUs).To(Equal(Find(charges, w.UID).GPUs))
	}
}
