package quota

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// cohortQuotas are three tenants' quotas of one cohort, on 2, 4 and 8
// GPUs, borrowing at most 2, 3 and 4.
var cohortQuotas = []string{"coh-a", "coh-b", "coh-c"}

func createCohort(t *testing.T) {
	for i, name := range cohortQuotas {
		l := quotav1alpha1.GPULimit{Name: "gpus", ResourceName: nv, Count: int64(2) << i, BorrowingLimit: ptr.To(int64(2 + i))}
		if i == 1 {
			l.LendingLimit = ptr.To[int64](3)
		}
		q := &quotav1alpha1.TenantQuota{}
		q.Name = name
		q.Spec = quotav1alpha1.TenantQuotaSpec{Cohort: "lab", Hard: quotav1alpha1.QuotaLimits{GPUs: []quotav1alpha1.GPULimit{l}}}
		startEnv(t)
		if err := env.Client.Create(context.Background(), q); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), q) })
	}
}

// cohortOp is a random reconcile of a workspace of tenant own: an
// admission of 1–5 GPUs planned with Borrow from the cache, or with any
// loans from anyone, a stop (its
// place held, its loans ended), a release, or keeping what it holds as a
// running workspace does (unchecked).
func cohortOp(rng *rand.Rand, cache client.Client, w *workspacesv1.WorkspaceDeployment, own string, clean bool) ([]Want, []string) {
	ctx := context.Background()
	all := map[string]*quotav1alpha1.TenantQuota{}
	var qs []*quotav1alpha1.TenantQuota
	counted := map[string]*quotav1alpha1.QuotaCharge{}
	for _, name := range cohortQuotas {
		q := &quotav1alpha1.TenantQuota{}
		if err := cache.Get(ctx, client.ObjectKey{Name: name}, q); err != nil {
			return nil, nil
		}
		all[name] = q
		qs = append(qs, q)
		counted[name] = Counted(q, RefOf(w), w.Status.QuotaCharges)
	}
	others := func() []string {
		var out []string
		for _, name := range cohortQuotas {
			if name != own {
				out = append(out, name)
			}
		}
		return out
	}
	op := rng.IntN(8)
	if op == 2 && !clean {
		op = 7 // only an admitted workspace keeps its records as they are
	}
	switch op {
	case 0:
		return nil, cohortQuotas
	case 1:
		if counted[own] == nil {
			return nil, nil
		}
		return []Want{{Quota: own, Charge: Held(*counted[own])}}, others()
	case 2:
		// As the controller keeps a running workspace's charges: from its
		// records, as the Sync that admitted it wrote them.
		var wants []Want
		var leave []string
		for _, name := range cohortQuotas {
			if r := RecordOf(w.Status.QuotaCharges, all[name]); r != nil && !r.Released {
				wants = append(wants, Want{Quota: name, Charge: recordCharge(RefOf(w), *r)})
			} else {
				leave = append(leave, name)
			}
		}
		return wants, leave
	case 3:
		// Any plan, however wrong (a cache far behind, another version):
		// the checks at the write are what keep every limit.
		c := gpuCharge(w, int64(1+rng.IntN(5)))
		b := int64(rng.IntN(int(c.GPUs) + 1))
		p := Plan{Charges: map[string]quotav1alpha1.QuotaCharge{}, Loans: map[string]quotav1alpha1.QuotaCharge{}, Terms: map[string]LoanTerms{}}
		if b > 0 {
			c.Borrowed = []commonv1.LimitGPUs{{Limit: "gpus", Count: b}}
			for left := b; left > 0; {
				lender := others()[rng.IntN(2)]
				n := 1 + rng.Int64N(left)
				loan := p.Loans[lender]
				loan.Namespace, loan.Name, loan.UID, loan.ChargedAt = c.Namespace, c.Name, c.UID, c.ChargedAt
				if len(loan.Lent) == 0 {
					loan.Lent = []commonv1.LimitGPUs{{Limit: "gpus"}}
				}
				loan.Lent[0].Count += n
				p.Loans[lender] = loan
				p.Terms[lender] = LoanTerms{Cohort: all[own].Spec.Cohort, Limits: all[own].Spec.Hard.GPUs}
				left -= n
			}
		}
		p.Charges[own] = c
		wants := p.Wants([]*quotav1alpha1.TenantQuota{all[own]}, true)
		var leave []string
		for _, name := range others() {
			if _, ok := p.Loans[name]; !ok {
				leave = append(leave, name)
			}
		}
		return wants, leave
	default:
		c := gpuCharge(w, int64(1+rng.IntN(5)))
		p := Borrow([]*quotav1alpha1.TenantQuota{all[own]}, qs, counted, c)
		wants := p.Wants([]*quotav1alpha1.TenantQuota{all[own]}, true)
		var leave []string
		for _, name := range others() {
			if _, ok := p.Loans[name]; !ok {
				leave = append(leave, name)
			}
		}
		return wants, leave
	}
}

// changeTerms lowers or raises a quota's count, borrowing or lending
// limit, or takes it out of the cohort and back: never evicting.
func changeTerms(rng *rand.Rand, name string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		q := &quotav1alpha1.TenantQuota{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, q); err != nil {
			return err
		}
		l := &q.Spec.Hard.GPUs[0]
		switch rng.IntN(4) {
		case 0:
			l.Count = int64(2 + rng.IntN(7))
		case 1:
			l.BorrowingLimit = ptr.To(int64(rng.IntN(4)))
		case 2:
			l.LendingLimit = ptr.To(int64(rng.IntN(4)))
		default:
			if q.Spec.Cohort == "" {
				q.Spec.Cohort = "lab"
			} else {
				q.Spec.Cohort = ""
			}
		}
		return env.Client.Update(context.Background(), q)
	})
}

// cohortView reads the cohort's quotas, live, in cohortQuotas' order.
func cohortView(g Gomega) ([]*quotav1alpha1.TenantQuota, []*quotav1alpha1.TenantQuota) {
	var all []*quotav1alpha1.TenantQuota
	for _, name := range cohortQuotas {
		all = append(all, getQuota(g, name))
	}
	return all, all
}

// measures are what a cohort quota counts of its GPU limit: nominal (its
// GPUs but those borrowed), borrowed and lent.
type measures struct{ nominal, borrowed, lent int64 }

func measure(q *quotav1alpha1.TenantQuota) measures {
	for _, g := range q.Status.Used.GPUs {
		return measures{g.Count - g.Borrowed, g.Borrowed, g.Lent}
	}
	return measures{}
}

// expectQuotas: (exact, once nothing else writes) each quota's totals
// are exactly what it counts of every workspace; a measure above its limit
// (lowered since) never grew; no quota borrows and lends at once.
func expectQuotas(g Gomega, keys []client.ObjectKey, prev map[string]measures, exact bool) {
	for _, name := range cohortQuotas {
		q := getQuota(g, name)
		if exact {
			var counted []quotav1alpha1.QuotaCharge
			for _, k := range keys {
				w := &workspacesv1.WorkspaceDeployment{}
				g.Expect(env.Client.Get(context.Background(), k, w)).To(Succeed())
				if c := Counted(q, RefOf(w), w.Status.QuotaCharges); c != nil {
					counted = append(counted, *c)
				}
			}
			want := totalsOf(q.Status.Hard, counted).usage(q.Status.Hard)
			g.Expect(q.Status.Used.GPUs).To(Equal(want.GPUs), "%s: GPUs", name)
		}
		if len(q.Status.Hard.GPUs) == 0 {
			continue
		}
		l, m, was := q.Status.Hard.GPUs[0], measure(q), prev[name]
		borrowing := int64(0)
		if q.Spec.Cohort != "" {
			borrowing = ptr.Deref(l.BorrowingLimit, 1<<40)
		}
		for _, c := range []struct {
			what        string
			now, before int64
			limit       int64
		}{
			{"nominal", m.nominal, was.nominal, l.Count},
			{"borrowed", m.borrowed, was.borrowed, borrowing},
			{"lent", m.lent, was.lent, ptr.Deref(l.LendingLimit, 1<<40)},
		} {
			if c.now > c.limit {
				g.Expect(c.now).To(BeNumerically("<=", max(c.before, c.limit)), "%s: %s grew past its limit", name, c.what)
			}
		}
		g.Expect(m.borrowed == 0 || m.lent == 0).To(BeTrue(), "%s borrows %d and lends %d at once", name, m.borrowed, m.lent)
		prev[name] = m
	}
}

// expectBacked: the records a workspace's admission wrote borrow exactly
// what its loans' records lend, and no loan is from its own tenant. It
// returns what they borrow.
func expectBacked(g Gomega, key client.ObjectKey, own string) int64 {
	w := &workspacesv1.WorkspaceDeployment{}
	g.Expect(env.Client.Get(context.Background(), key, w)).To(Succeed())
	var borrowed, lent int64
	for _, r := range w.Status.QuotaCharges {
		if r.Released {
			continue
		}
		if len(r.Lent) > 0 {
			g.Expect(r.Quota).NotTo(Equal(own), "%s borrows from its own tenant", w.Name)
		}
		borrowed += limitCount(r.Borrowed, "gpus")
		lent += limitCount(r.Lent, "gpus")
	}
	g.Expect(borrowed).To(Equal(lent), "%s: records borrow what its loans lend: %+v", w.Name, w.Status.QuotaCharges)
	return borrowed
}

// TestPropertyCohortBorrowsWithinEveryLimit runs random admissions
// (planned with Borrow from a lagging cache), stops, releases, keeps and
// term changes (count, borrowingLimit, lendingLimit, leaving and joining
// the cohort) of 12 workspaces of three tenants in one cohort, from four
// processes over two caches at once, each dying (p = 0.05) before any quota write
// and between a reconcile's writes. After every step: no quota's nominal use, borrowing or lending grows past its
// limit; each workspace's records borrow exactly what its loans lend. Once
// settled, nothing is in flight, the totals are exact and the same holds.
func TestPropertyCohortBorrowsWithinEveryLimit(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	createCohort(t)
	caches := []client.Client{replica(t).Client, replica(t).Client}
	keys := make([]client.ObjectKey, 12)
	for i := range keys {
		keys[i] = client.ObjectKeyFromObject(newWorkspace(t, fmt.Sprintf("coh-%d", i)))
	}
	clean := make([]bool, len(keys)) // the last reconcile of the workspace admitted it, stopped or released it
	// Start from a loan: tenant a's first workspace takes 4 GPUs on its 2.
	first := &workspacesv1.WorkspaceDeployment{}
	g.Expect(env.Client.Get(ctx, keys[0], first)).To(Succeed())
	own, all := cohortView(g)
	p := Borrow(own[:1], all, nil, gpuCharge(first, 4))
	g.Expect(p.Loans).NotTo(BeEmpty())
	_, err := reconcile(ctx, replica(t), first, p.Wants(own[:1], true))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(expectBacked(g, keys[0], cohortQuotas[0])).To(BeEquivalentTo(2))
	clean[0] = true
	var mu sync.Mutex // the quotas' checks, one at a time; the writers race
	prev := map[string]measures{}
	var wg sync.WaitGroup
	died, borrowedSeen, backed, borrows := 0, int64(0), 0, 0
	for p := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pr := newProcess(t, caches[p%2], uint64(300+p), 0.05)
			gg := NewGomega(func(message string, _ ...int) { t.Error(message) })
			for range 40 {
				i := 3*p + pr.rng.IntN(3) // one writer per workspace, as a controller's queue guarantees
				w := &workspacesv1.WorkspaceDeployment{}
				if err := env.Client.Get(ctx, keys[i], w); err != nil {
					t.Error(err)
					return
				}
				if pr.rng.IntN(5) == 0 {
					// A limit lowered below what was legally taken before:
					// from now on it must not grow.
					mu.Lock()
					name := cohortQuotas[pr.rng.IntN(3)]
					if err := changeTerms(pr.rng, name); err != nil {
						t.Error(err)
					}
					prev[name] = measure(getQuota(gg, name))
					mu.Unlock()
				}
				wants, leave := cohortOp(pr.rng, pr.cache, w, cohortQuotas[i%3], clean[i])
				if len(wants)+len(leave) == 0 {
					continue // nothing to write: the records stay as the last reconcile left them
				}
				refusal, ok := pr.reconcile(ctx, w, wants, leave)
				clean[i] = ok && refusal == nil
				borrowing := int64(0)
				if clean[i] {
					borrowing = expectBacked(gg, keys[i], cohortQuotas[i%3])
				}
				mu.Lock()
				expectQuotas(gg, keys, prev, false)
				for _, name := range cohortQuotas {
					borrowedSeen = max(borrowedSeen, measure(getQuota(gg, name)).borrowed)
				}
				if clean[i] {
					backed++
				}
				if borrowing > 0 {
					borrows++
				}
				mu.Unlock()
			}
			mu.Lock()
			died += pr.died
			mu.Unlock()
		}()
	}
	wg.Wait()
	t.Logf("the processes died %d times; %d reconciles admitted, stopped or released, %d of them borrowing; at most %d GPUs borrowed at once by one tenant",
		died, backed, borrows, borrowedSeen)
	calm := newProcess(t, caches[0], 99, 0)
	for i, k := range keys {
		w := &workspacesv1.WorkspaceDeployment{}
		g.Expect(env.Client.Get(ctx, k, w)).To(Succeed())
		var wants []Want
		var leave []string
		for _, name := range cohortQuotas {
			if c := Counted(getQuota(g, name), RefOf(w), w.Status.QuotaCharges); c != nil {
				wants = append(wants, Want{Quota: name, Charge: *c})
			} else {
				leave = append(leave, name)
			}
		}
		_, ok := calm.reconcile(ctx, w, wants, leave)
		g.Expect(ok).To(BeTrue(), "workspace %d settles", i)
	}
	calm.l.flush()
	for _, name := range cohortQuotas {
		g.Expect(getQuota(g, name).Status.Inflight).To(BeEmpty(), "%s: every change settled", name)
	}
	expectQuotas(g, keys, prev, true)
}

// TestBorrowAndReclaim: a tenant borrows what its cohort does not use,
// within its borrowingLimit and the lenders' lendingLimit; a lender whose
// own workspace would fit its nominal quota without its loans gets it back
// by stopping the borrowers (PreemptFor over the loans), the fewest.
func TestBorrowAndReclaim(t *testing.T) {
	g := NewWithT(t)
	lim := func(count int64, borrow, lend *int64) quotav1alpha1.QuotaLimits {
		return quotav1alpha1.QuotaLimits{GPUs: []quotav1alpha1.GPULimit{{Name: "gpus", ResourceName: nv, Count: count,
			BorrowingLimit: borrow, LendingLimit: lend}}}
	}
	a := tenantQuota(lim(2, ptr.To[int64](3), nil))
	a.Name, a.Spec.Cohort = "a", "lab"
	b := tenantQuota(lim(4, nil, ptr.To[int64](2)))
	b.Name, b.Spec.Cohort = "b", "lab"
	c := tenantQuota(lim(4, nil, nil))
	c.Name = "c" // not in the cohort: lends nothing
	ws := func(name string, gpus int64) quotav1alpha1.QuotaCharge {
		return Request{Namespace: "t", Name: name, UID: types.UID(name), GPUs: gpus, ResourceName: nv}.Charge(fakeNow)
	}
	all := []*quotav1alpha1.TenantQuota{a, b, c}
	own := []*quotav1alpha1.TenantQuota{a}

	// 4 GPUs: 2 of a's own, 2 borrowed from b (its lendingLimit).
	p := Borrow(own, all, nil, ws("w1", 4))
	g.Expect(p.Charges["a"].Borrowed).To(Equal([]commonv1.LimitGPUs{{Limit: "gpus", Count: 2}}))
	g.Expect(p.Loans).To(HaveKey("b"))
	g.Expect(p.Loans["b"].Lent).To(Equal([]commonv1.LimitGPUs{{Limit: "gpus", Count: 2}}))
	g.Expect(p.Loans).NotTo(HaveKey("c"))
	// 5 GPUs: b lends at most 2: nothing is borrowed, the check refuses.
	p5 := Borrow(own, all, nil, ws("w5", 5))
	g.Expect(p5.Charges["a"].Borrowed).To(BeEmpty())
	g.Expect(p5.Loans).To(BeEmpty())
	g.Expect(Check(a, nil, p5.Charges["a"])).NotTo(BeEmpty())

	// Write the plan of w1 as the Ledger does.
	at := fakeNow
	EnsureTotals(a)
	EnsureTotals(b)
	_, err := Move(a, RefOf(metaOf("w1")), nil, ptr.To(p.Charges["a"]), at)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = Move(b, RefOf(metaOf("w1")), nil, ptr.To(p.Loans["b"]), at)
	g.Expect(err).NotTo(HaveOccurred())
	Refresh(a)
	Refresh(b)
	g.Expect(a.Status.Used.GPUs[0]).To(Equal(quotav1alpha1.GPUUsage{Name: "gpus", Count: 4, Borrowed: 2}))
	g.Expect(b.Status.Used.GPUs[0]).To(Equal(quotav1alpha1.GPUUsage{Name: "gpus", Count: 2, Lent: 2}))
	g.Expect(b.Status.Used.Workspaces).To(BeZero(), "a loan takes no place in the lender's count")
	g.Expect(a.Status.Summary).To(ContainSubstring("gpus/gpus: 4/2 (2 borrowed)"))
	g.Expect(conditionStatus(a)).To(Equal("True"), "borrowing within its limits is within limits")

	// b's own workspace of 4 does not fit beside its loan; stopping the
	// borrower gives b its nominal 4 back.
	mine := ws("b1", 4)
	g.Expect(Check(b, nil, mine)).NotTo(BeEmpty())
	loan := *Counted(b, RefOf(metaOf("w1")), nil)
	pre := PreemptFor(b, nil, nil, []quotav1alpha1.QuotaCharge{loan}, mine)
	g.Expect(pre.Victims).To(Equal([]int{0}))
	// A request past b's nominal is not a reclaim: no loan's end makes it fit.
	g.Expect(PreemptFor(b, nil, nil, []quotav1alpha1.QuotaCharge{loan}, ws("b2", 5)).Victims).To(BeEmpty())
}

var fakeNow = metav1.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)

func metaOf(name string) metav1.Object {
	return &metav1.ObjectMeta{Namespace: "t", Name: name, UID: types.UID(name)}
}

func conditionStatus(q *quotav1alpha1.TenantQuota) string {
	if c := conditions.Get(q, quotav1alpha1.WithinLimitsCondition); c != nil {
		return string(c.Status)
	}
	return ""
}

// TestPropertyALenderGetsItsShareBack: on 2,000 random lenders (a count,
// a lending limit, charges of its own and loans to workspaces of the
// cohort, each written as the Ledger writes it, within every limit), a
// charge of its own that the quota refuses but would fit were its loans
// given back always finds borrowers whose stop makes it fit (PreemptFor
// with the loans as candidates), and no victim is needless; one that would
// not fit even then stops no one. And Borrow plans the same loans whatever
// the order it is given the cohort's quotas in.
func TestPropertyALenderGetsItsShareBack(t *testing.T) {
	g := NewWithT(t)
	rng := rand.New(rand.NewPCG(34, 7))
	reclaims := 0
	for n := range 2000 {
		count := int64(1 + rng.IntN(8))
		q := tenantQuota(quotav1alpha1.QuotaLimits{GPUs: []quotav1alpha1.GPULimit{{Name: "gpus", ResourceName: nv, Count: count}}})
		q.Name, q.Spec.Cohort = "lender", "lab"
		if rng.IntN(2) == 0 {
			q.Spec.Hard.GPUs[0].LendingLimit = ptr.To(int64(rng.IntN(int(count) + 1)))
		}
		EnsureTotals(q)
		var loans []quotav1alpha1.QuotaCharge
		for i := range 1 + rng.IntN(6) {
			name := fmt.Sprintf("w%d-%d", n, i)
			var c quotav1alpha1.QuotaCharge
			if rng.IntN(2) == 0 {
				c = quotav1alpha1.QuotaCharge{Namespace: "other", Name: name, UID: types.UID(name), ChargedAt: fakeNow,
					Lent: []commonv1.LimitGPUs{{Limit: "gpus", Count: int64(1 + rng.IntN(3))}}}
			} else {
				c = Request{Namespace: "own", Name: name, UID: types.UID(name), GPUs: int64(1 + rng.IntN(3)), ResourceName: nv}.Charge(fakeNow)
			}
			if len(Check(q, nil, c)) > 0 {
				continue
			}
			_, err := Move(q, RefOf(metaOf(name)), nil, &c, fakeNow)
			g.Expect(err).NotTo(HaveOccurred())
			if IsLoan(c) {
				loans = append(loans, c)
			}
		}
		if rng.IntN(2) == 0 {
			// Room for one more workspace, exactly: a loan's end gives no place back.
			q.Spec.Hard.Workspaces = ptr.To(q.Status.Used.Workspaces + 1)
			Refresh(q)
		}
		c := Request{Namespace: "own", Name: "new", UID: "new", GPUs: int64(1 + rng.IntN(int(count)+1)), ResourceName: nv}.Charge(fakeNow)
		back := q.DeepCopy()
		for _, l := range loans {
			_, err := Move(back, RefOf(metaOf(l.Name)), &l, nil, fakeNow)
			g.Expect(err).NotTo(HaveOccurred())
		}
		fitsNow, fitsBack := len(Check(q, nil, c)) == 0, len(Check(back, nil, c)) == 0
		g.Expect(FitsWithoutLoans(q, nil, c)).To(Equal(fitsBack), "case %d: FitsWithoutLoans", n)
		p := PreemptFor(q, nil, nil, loans, c)
		switch {
		case fitsNow:
			g.Expect(p.Victims).To(BeEmpty(), "case %d: it fits already", n)
		case !fitsBack:
			g.Expect(p.Victims).To(BeEmpty(), "case %d: beyond its nominal share, nothing is reclaimed", n)
		default:
			reclaims++
			g.Expect(p.Victims).NotTo(BeEmpty(), "case %d: the lender gets its share back", n)
			stopped := func(skip int) bool {
				cp := q.DeepCopy()
				for _, i := range p.Victims {
					if i != skip {
						l := loans[i]
						_, _ = Move(cp, RefOf(metaOf(l.Name)), &l, nil, fakeNow)
					}
				}
				return len(Check(cp, nil, c)) == 0
			}
			g.Expect(stopped(-1)).To(BeTrue(), "case %d: the victims' stop makes it fit", n)
			for _, v := range p.Victims {
				g.Expect(stopped(v)).To(BeFalse(), "case %d: victim %d is needed", n, v)
			}
		}

		// The same plan in any order of the cohort.
		cohort := []*quotav1alpha1.TenantQuota{q}
		for j := range 3 {
			o := tenantQuota(quotav1alpha1.QuotaLimits{GPUs: []quotav1alpha1.GPULimit{{Name: "gpus", ResourceName: nv, Count: int64(rng.IntN(5))}}})
			o.Name, o.Spec.Cohort = fmt.Sprintf("o%d", j), "lab"
			EnsureTotals(o)
			cohort = append(cohort, o)
		}
		own := []*quotav1alpha1.TenantQuota{cohort[1]}
		want := Borrow(own, cohort, nil, c)
		for range 3 {
			shuffled := slices.Clone(cohort)
			rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			g.Expect(Borrow(own, shuffled, nil, c)).To(Equal(want), "case %d: the plan depends on no order", n)
		}
	}
	t.Logf("%d of 2,000 lenders reclaimed", reclaims)
	g.Expect(reclaims).To(BeNumerically(">", 100))
}

// TestSyncRefusesUnbackedBorrowing: a checked charge that borrows without
// the loans that back it (or loans that lend more) is not written to any
// quota, whatever room the quota has.
func TestSyncRefusesUnbackedBorrowing(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	l := replica(t)
	createQuota(t, "unbacked-a", quotav1alpha1.QuotaLimits{GPUs: []quotav1alpha1.GPULimit{{Name: "gpus", ResourceName: nv, Count: 1}}})
	w := newWorkspace(t, "unbacked")
	c := gpuCharge(w, 2)
	c.Borrowed = []commonv1.LimitGPUs{{Limit: "gpus", Count: 1}}
	loan := quotav1alpha1.QuotaCharge{Namespace: w.Namespace, Name: w.Name, UID: w.UID, ChargedAt: c.ChargedAt,
		Lent: []commonv1.LimitGPUs{{Limit: "gpus", Count: 2}}}
	for _, wants := range [][]Want{
		{{Quota: "unbacked-a", Charge: c, Check: true}},
		{{Quota: "unbacked-a", Charge: c, Check: true}, {Quota: "unbacked-b", Charge: loan, Check: true}},
	} {
		_, refusal, err := l.Sync(ctx, w, nil, wants, nil)
		g.Expect(refusal).To(BeNil())
		g.Expect(err).To(MatchError(ErrUnbacked))
		g.Expect(getQuota(g, "unbacked-a").Status.Inflight).To(BeEmpty(), "nothing written")
	}
}

// TestAPlanGivesEachLenderItsOwnCohortsTerms: a namespace two quotas
// select, each in its own cohort, borrows in both; each loan carries the
// terms of its lender's cohort, whatever the order of the maps, so that
// Lends accepts every loan of the plan.
func TestAPlanGivesEachLenderItsOwnCohortsTerms(t *testing.T) {
	g := NewWithT(t)
	quotaIn := func(name, cohort string, count int64) *quotav1alpha1.TenantQuota {
		q := tenantQuota(quotav1alpha1.QuotaLimits{GPUs: []quotav1alpha1.GPULimit{{Name: "gpus", ResourceName: nv, Count: count}}})
		q.Name, q.Spec.Cohort = name, cohort
		EnsureTotals(q)
		return q
	}
	own := []*quotav1alpha1.TenantQuota{quotaIn("own-x", "x", 1), quotaIn("own-y", "y", 1)}
	all := append([]*quotav1alpha1.TenantQuota{quotaIn("lend-x", "x", 4), quotaIn("lend-y", "y", 4)}, own...)
	c := Request{Namespace: "t", Name: "w", UID: "w", GPUs: 3, ResourceName: nv}.Charge(fakeNow)
	for range 20 {
		wants := Borrow(own, all, nil, c).Wants(own, true)
		g.Expect(wants).To(HaveLen(4))
		for _, w := range wants[2:] {
			g.Expect(w.Loan).NotTo(BeNil())
			lender := all[0]
			if w.Quota == "lend-y" {
				lender = all[1]
			}
			g.Expect(Lends(lender, *w.Loan)).To(BeTrue(), "%s lends on its own cohort's terms", w.Quota)
		}
		g.Expect(backed(wants)).To(Succeed())
	}
}
