package admission

import (
	"fmt"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	"github.com/apiaryhq/apiary/internal/quota"
)

// benchFleet is 1,000 waiting workspaces over 50 clusters (20 each, beside
// 20 admitted ones on 8 nodes of 8 GPUs that bound pods mostly fill) and 10
// tenant quotas, each selecting a tenth of the workspaces and holding the
// charges of its admitted ones.
type benchFleet struct {
	clusters []Snapshot
	quotas   []*quotav1alpha1.TenantQuota
	// waiters are the keys of the waiting workspaces, with their cluster and quota.
	waiters []benchWaiter
}

type benchWaiter struct {
	key      string
	cluster  int
	quota    int
	priority int32
	created  time.Time
	uid      string
	charge   quotav1alpha1.QuotaCharge
	older    []quotav1alpha1.QuotaCharge // the quota's waiters ahead of it (QueueOrder)
}

// newBenchFleet builds the fleet; the n-th workspace has priority
// priorities[n % len(priorities)], none without priorities.
func newBenchFleet(clusters, waitingPerCluster, quotas int, priorities []int32) *benchFleet {
	f := &benchFleet{}
	for q := range quotas {
		f.quotas = append(f.quotas, &quotav1alpha1.TenantQuota{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("q%d", q)},
			Spec: quotav1alpha1.TenantQuotaSpec{Hard: quotav1alpha1.QuotaLimits{Workspaces: ptr.To[int64](10000),
				GPUs: []quotav1alpha1.GPULimit{{Name: "all", ResourceName: nv, Count: 100000}, {Name: "h100", ResourceName: nv, GPUModel: "H100", Count: 100000}}}}})
	}
	n := 0
	for c := range clusters {
		var s Snapshot
		for i := range 8 {
			name := fmt.Sprintf("c%d-n%d", c, i)
			s.Nodes = append(s.Nodes, gpuNode(name, 8, simLabels[i%len(simLabels)]))
			s.Pods = append(s.Pods, pod(name, "", 6))
		}
		for i := range 2 * waitingPerCluster {
			n++
			key := fmt.Sprintf("ns%d/w%d", n%quotas, n)
			w := Workspace{Key: key, UID: fmt.Sprintf("uid-%06d", n), Created: t0.Add(time.Duration(n) * time.Second)}
			if len(priorities) > 0 {
				w.Priority = priorities[n%len(priorities)]
			}
			r := Request{Selector: simSelectors[i%len(simSelectors)], Resource: nv, PerReplica: int64(1 + i%2), Replicas: 1}
			ch := quota.Request{Namespace: fmt.Sprintf("ns%d", n%quotas), Name: key, UID: types.UID(w.UID), GPUs: r.Demand(),
				ResourceName: nv, Selector: r.Selector}.Charge(metav1.NewTime(w.Created))
			if i < waitingPerCluster {
				w.Admitted = &Admission{Request: r, Placement: []Slot{{Node: fmt.Sprintf("c%d-n%d", c, i%8), GPUs: r.PerReplica}}}
				qq := f.quotas[n%quotas]
				qq.Status.Charges = quota.Upsert(qq.Status.Charges, ch)
			} else {
				r.PerReplica = 4 // more than any node has left: they wait
				ch.GPUs = 4
				w.Pending = &r
				f.waiters = append(f.waiters, benchWaiter{key: key, cluster: c, quota: n % quotas, charge: ch,
					priority: w.Priority, created: w.Created, uid: w.UID})
			}
			s.Workspaces = append(s.Workspaces, w)
		}
		f.clusters = append(f.clusters, s)
	}
	for _, q := range f.quotas {
		quota.EnsureTotals(q) // the charges, as totals
	}
	// Each quota's queue in QueueOrder: a waiter's older are those ahead of it.
	ahead := func(a, b benchWaiter) int {
		return QueueOrder(a.priority, a.created, a.uid, b.priority, b.created, b.uid)
	}
	sorted := append([]benchWaiter(nil), f.waiters...)
	slices.SortStableFunc(sorted, ahead)
	queues := make([][]quotav1alpha1.QuotaCharge, quotas)
	older := map[string][]quotav1alpha1.QuotaCharge{}
	for _, w := range sorted {
		older[w.key] = append([]quotav1alpha1.QuotaCharge(nil), queues[w.quota]...)
		queues[w.quota] = append(queues[w.quota], w.charge)
	}
	for i := range f.waiters {
		f.waiters[i].older = older[f.waiters[i].key]
	}
	return f
}

// BenchmarkAdmissionDecisions measures the gate's decision path for one
// waiting workspace: plan its cluster's queue (40 workspaces, 8 nodes),
// then its place in its tenant quota's queue (every older waiter of the
// tenant, about 100) and the quota check. It reports decisions per second
// on a fleet of 1,000 waiting workspaces over 50 clusters and 10 quotas:
// fifo without priorities, priorities with four (0, 100, -10, 1000) spread
// over the fleet, so that each queue is re-sorted by priority; preemption
// with the same priorities, every waiting workspace then looking for
// lower-priority workspaces to stop (Preempt), as one whose priority class
// preempts does; cohort with the same again, the quotas in one cohort
// (joinCohort), every waiter planning what it borrows (quota.Borrow over
// the 10 quotas) and checking its loans with their lenders.
//
//	go test ./internal/admission -run '^$' -bench AdmissionDecisions -benchtime 3s
func BenchmarkAdmissionDecisions(b *testing.B) {
	b.Run("fifo", func(b *testing.B) { benchAdmissionDecisions(b, nil, false, false) })
	b.Run("priorities", func(b *testing.B) { benchAdmissionDecisions(b, []int32{0, 100, -10, 1000}, false, false) })
	b.Run("preemption", func(b *testing.B) { benchAdmissionDecisions(b, []int32{0, 100, -10, 1000}, true, false) })
	b.Run("cohort", func(b *testing.B) { benchAdmissionDecisions(b, []int32{0, 100, -10, 1000}, true, true) })
}

// joinCohort puts the fleet's quotas in one cohort: the even ones full (a
// nominal count of what they hold), the odd ones with room to lend, so
// that every waiter of an even quota borrows.
func (f *benchFleet) joinCohort() {
	for i, q := range f.quotas {
		q.Spec.Cohort = "fleet"
		for j := range q.Spec.Hard.GPUs {
			used := q.Status.Used.GPUs[j].Count
			q.Spec.Hard.GPUs[j].Count = used
			if i%2 == 1 {
				q.Spec.Hard.GPUs[j].Count = used + 100000
			}
		}
		q.Status.Hard = *q.Spec.Hard.DeepCopy()
	}
}

func benchAdmissionDecisions(b *testing.B, priorities []int32, preempt, cohort bool) {
	f := newBenchFleet(50, 20, 10, priorities)
	if len(f.waiters) != 1000 {
		b.Fatalf("%d waiters", len(f.waiters))
	}
	byName := map[string]*quotav1alpha1.TenantQuota{}
	for _, q := range f.quotas {
		byName[q.Name] = q
	}
	if cohort {
		f.joinCohort()
	}
	b.ReportAllocs()
	b.ResetTimer()
	waits, borrowed := 0, 0
	for i := range b.N {
		w := f.waiters[i%len(f.waiters)]
		d := Decide(f.clusters[w.cluster], w.key, StrictFIFO)
		q := f.quotas[w.quota]
		charge := w.charge
		if cohort {
			own := []*quotav1alpha1.TenantQuota{q}
			p := quota.Borrow(own, f.quotas, nil, w.charge)
			charge = p.Charges[q.Name]
			for name, loan := range p.Loans {
				_ = quota.Check(byName[name], nil, loan)
			}
			if len(p.Loans) > 0 {
				borrowed++
			}
		}
		if len(quota.Ahead(q, nil, w.older, charge)) == 0 {
			_ = quota.Check(q, nil, charge)
		}
		if d.Outcome == Wait {
			waits++
			if preempt {
				_ = Preempt(f.clusters[w.cluster], w.key, StrictFIFO, func(*Workspace) bool { return true })
			}
		}
	}
	b.StopTimer()
	if waits != b.N {
		b.Fatalf("%d of %d decisions waited; every workspace of the fleet should", waits, b.N)
	}
	if cohort && borrowed < b.N/2 {
		b.Fatalf("%d of %d decisions borrowed; every waiter of an even quota should", borrowed, b.N)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
}
