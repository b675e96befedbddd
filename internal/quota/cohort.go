package quota

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	"github.com/apiaryhq/apiary/internal/resources"
)

// Cohorts (docs/admission.md, "Cohorts"). A quota in a cohort may count
// more GPUs against a GPU limit than the limit's count (its nominal
// quota) when other members lend them: the workspace's charge in its own
// quota says how many of its GPUs it borrows (Borrowed), and each lender
// counts a loan to the workspace (Lent), an entry of its own ledger that
// takes those GPUs of its nominal count and nothing else. Both are
// written in the one Ledger.Sync of the workspace's charges, each with its
// quota's resourceVersion, so two borrowers, or a borrower and the
// lender's own workspace, never take the same idle GPUs: the second write
// conflicts and is checked again. A loan lasts as long as the admission it
// was planned for; a lender's workspace that needs its nominal GPUs back
// stops the borrowers (PreemptFor, with the loans as candidates).

// Plan is what a workspace's charge counts in each quota when it borrows.
type Plan struct {
	// Charges are the charges of the workspace's own quotas, by name, with
	// what each borrows.
	Charges map[string]quotav1alpha1.QuotaCharge
	// Loans are the loans to the workspace, by the lender's name.
	Loans map[string]quotav1alpha1.QuotaCharge
	// Terms are what each lender must still offer when its loan is
	// written, by the lender's name.
	Terms map[string]LoanTerms
}

// Wants are the plan's writes: every own quota's charge, then every loan
// with its lender's terms, in name order.
func (p Plan) Wants(own []*quotav1alpha1.TenantQuota, check bool) []Want {
	out := make([]Want, 0, len(own)+len(p.Loans))
	for _, q := range own {
		out = append(out, Want{Quota: q.Name, Charge: p.Charges[q.Name], Check: check})
	}
	for _, name := range slices.Sorted(maps.Keys(p.Loans)) {
		w := Want{Quota: name, Charge: p.Loans[name], Check: check}
		if t, ok := p.Terms[name]; ok {
			w.Loan = &t
		}
		out = append(out, w)
	}
	return out
}

// LoanTerms are what a lender must still offer when a loan is written:
// membership of the cohort, and GPU limits of the same names counting the
// same GPUs as the borrower's.
type LoanTerms struct {
	Cohort string
	Limits []quotav1alpha1.GPULimit
}

// Lends reports whether a quota lends on these terms now.
func Lends(q *quotav1alpha1.TenantQuota, t LoanTerms) bool {
	if t.Cohort == "" || q.Spec.Cohort != t.Cohort || Recounting(q) {
		return false
	}
	for _, want := range t.Limits {
		if lenderLimit(q, want) < 0 {
			return false
		}
	}
	return true
}

// lenderLimit is the index of a lender's GPU limit that counts the same
// GPUs under the same name as a borrower's limit, or -1.
func lenderLimit(q *quotav1alpha1.TenantQuota, want quotav1alpha1.GPULimit) int {
	for j, l := range q.Spec.Hard.GPUs {
		if SameGPULimits([]quotav1alpha1.GPULimit{l}, []quotav1alpha1.GPULimit{want}) {
			return j
		}
	}
	return -1
}

// Borrow plans what a charge borrows to fit the quotas that select its
// workspace (own): for each GPU limit of an own quota in a cohort that the
// charge would take past its count, the GPUs beyond it, within the
// limit's borrowingLimit (none while the quota lends some: it reclaims
// them instead), from the other members of the cohort (others,
// in name order; quotas that select the workspace lend it nothing), each
// up to what it does not use of its count and its lendingLimit (none while
// it borrows some). A limit
// the cohort cannot cover borrows nothing: the charge's check refuses it
// as it would without a cohort. counted is what each quota counts of the
// workspace now (Counted), by name, which the plan replaces.
func Borrow(own, others []*quotav1alpha1.TenantQuota, counted map[string]*quotav1alpha1.QuotaCharge, c quotav1alpha1.QuotaCharge) Plan {
	c.Borrowed, c.Lent = nil, nil
	p := Plan{Charges: map[string]quotav1alpha1.QuotaCharge{}, Loans: map[string]quotav1alpha1.QuotaCharge{}, Terms: map[string]LoanTerms{}}
	mine := map[string]bool{}
	for _, q := range own {
		mine[q.Name] = true
	}
	var lenders []lender
	for _, q := range others {
		if !mine[q.Name] && q.Spec.Cohort != "" && !Recounting(q) {
			lenders = append(lenders, lender{q: q, used: usedWithout(q, counted[q.Name])})
		}
	}
	slices.SortFunc(lenders, func(a, b lender) int { return strings.Compare(a.q.Name, b.q.Name) })
	lent := map[string]map[string]int64{} // planned, by lender and limit name
	for _, q := range own {
		charge := c
		if q.Spec.Cohort != "" && !Recounting(q) {
			charge.Borrowed = borrowFor(q, counted[q.Name], c, lenders, lent, p.Terms)
		}
		p.Charges[q.Name] = charge
	}
	for name, limits := range lent {
		loan := quotav1alpha1.QuotaCharge{Namespace: c.Namespace, Name: c.Name, UID: c.UID, ChargedAt: c.ChargedAt}
		for _, limit := range slices.Sorted(maps.Keys(limits)) {
			loan.Lent = append(loan.Lent, commonv1.LimitGPUs{Limit: limit, Count: limits[limit]})
		}
		p.Loans[name] = loan
	}
	return p
}

// lender is a member of the cohort that may lend, with what it counts of
// every workspace but the borrower.
type lender struct {
	q    *quotav1alpha1.TenantQuota
	used totals
}

// borrowFor plans what c borrows against each GPU limit of q, taking it
// from lenders, adding it to lent and each lender's terms.
func borrowFor(q *quotav1alpha1.TenantQuota, prior *quotav1alpha1.QuotaCharge, c quotav1alpha1.QuotaCharge,
	lenders []lender, lent map[string]map[string]int64, terms map[string]LoanTerms) []commonv1.LimitGPUs {
	hard := q.Spec.Hard
	used := usedWithout(q, prior)
	want := amountsOf(hard, &c)
	var out []commonv1.LimitGPUs
	for i, l := range hard.GPUs {
		need := want.gpus[i] - max(l.Count-used.nominal(i).Int64(), 0)
		if want.gpus[i] == 0 || need <= 0 {
			continue
		}
		if bl := borrowingLimit(q.Spec.Cohort, l, used.lent[i]); bl != nil && used.borrowed[i].Int64() > *bl-need {
			continue
		}
		takes := map[string]int64{}
		got := int64(0)
		for _, ld := range lenders {
			if got == need {
				break
			}
			if ld.q.Spec.Cohort != q.Spec.Cohort {
				continue
			}
			j := lenderLimit(ld.q, l)
			if j < 0 {
				continue
			}
			n := min(ld.lendable(j)-lent[ld.q.Name][l.Name], need-got)
			if n > 0 {
				takes[ld.q.Name] = n
				got += n
			}
		}
		if got < need {
			continue
		}
		for name, n := range takes {
			if lent[name] == nil {
				lent[name] = map[string]int64{}
			}
			lent[name][l.Name] += n
			t := terms[name]
			t.Cohort, t.Limits = q.Spec.Cohort, append(t.Limits, l)
			terms[name] = t
		}
		out = append(out, commonv1.LimitGPUs{Limit: l.Name, Count: need})
	}
	return out
}

// lendable is how many GPUs of its limit j a lender may lend the
// borrower: what it does not use of the count, within its lendingLimit.
func (ld lender) lendable(j int) int64 {
	l := ld.q.Spec.Hard.GPUs[j]
	room := l.Count - ld.used.nominal(j).Int64()
	if ll := lendingLimit(l, ld.used.borrowed[j]); ll != nil {
		room = min(room, *ll-ld.used.lent[j].Int64())
	}
	return max(room, 0)
}

// usedWithout is what a quota, not recounting, counts against its spec's
// limits of every workspace but the one it counts prior of.
func usedWithout(q *quotav1alpha1.TenantQuota, prior *quotav1alpha1.QuotaCharge) totals {
	used := usedTotals(withTotals(q))
	if prior != nil {
		used.put(amountsOf(q.Spec.Hard, prior), -1)
	}
	return used
}

// ErrUnbacked is returned by Sync when the checked charges of a call
// borrow other GPUs than its checked loans lend: what a charge borrows is
// admitted only with the loans that back it.
var ErrUnbacked = errors.New("the charges borrow other GPUs than the loans lend")

// backed checks that the checked wants' charges borrow, per GPU limit,
// exactly what their loans lend.
func backed(wants []Want) error {
	borrowed, lent := map[string]int64{}, map[string]int64{}
	for _, w := range wants {
		if !w.Check {
			continue
		}
		for _, g := range w.Charge.Borrowed {
			borrowed[g.Limit] = resources.SatAdd(borrowed[g.Limit], counted(g.Count))
		}
		for _, g := range w.Charge.Lent {
			lent[g.Limit] = resources.SatAdd(lent[g.Limit], counted(g.Count))
		}
	}
	if !maps.Equal(borrowed, lent) {
		return fmt.Errorf("borrowed %v, lent %v: %w", borrowed, lent, ErrUnbacked)
	}
	return nil
}

// Lending reports whether a quota lends GPUs to its cohort now.
func Lending(q *quotav1alpha1.TenantQuota) bool {
	return slices.ContainsFunc(q.Status.Used.GPUs, func(g quotav1alpha1.GPUUsage) bool { return g.Lent > 0 })
}

// FitsWithoutLoans reports whether a charge would fit a quota were every
// loan the quota made given back: a lender's claim on its nominal share.
// prior is what the quota counts of the charge's workspace now.
func FitsWithoutLoans(q *quotav1alpha1.TenantQuota, prior *quotav1alpha1.QuotaCharge, c quotav1alpha1.QuotaCharge) bool {
	t := newTally(q, priors(prior)...)
	for i := range t.used.gpus {
		t.used.gpus[i], t.used.lent[i] = t.used.gpus[i].Minus(t.used.lent[i]), resources.Sum{}
	}
	g := t.growth(c)
	if Recounting(q) && len(g) > 0 {
		return false
	}
	return len(exceeding(g)) == 0
}
