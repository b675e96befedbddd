package usage

import (
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
)

// DateLayout is how a day is written.
const DateLayout = time.DateOnly

// Held is a rate held since a time: a charge in force, not counted yet.
type Held struct {
	Rate  Rate
	Since time.Time
}

// Record counts a rate held over [from, to) into a tenant's usage: its
// total and each UTC day it spans; only the last MaxUsageDays days are
// kept. It returns the usage (a new one when tu is nil and there is
// something to count).
func Record(tu *quotav1alpha1.TenantUsage, r Rate, from, to time.Time) *quotav1alpha1.TenantUsage {
	if r.IsZero() || Seconds(from, to) == 0 {
		return tu
	}
	if tu == nil {
		tu = &quotav1alpha1.TenantUsage{}
	}
	from = from.Truncate(time.Second).UTC()
	if tu.Since == nil || from.Before(tu.Since.Time) {
		s := metav1.NewTime(from)
		tu.Since = &s
	}
	Add(&tu.Total, r.Over(from, to))
	eachDay(from, to, func(date string, a, b time.Time) {
		i, found := slices.BinarySearchFunc(tu.Days, date, func(d quotav1alpha1.DayUsage, date string) int {
			return strings.Compare(d.Date, date)
		})
		if !found {
			tu.Days = slices.Insert(tu.Days, i, quotav1alpha1.DayUsage{Date: date})
		}
		Add(&tu.Days[i].ResourceUsage, r.Over(a, b))
	})
	if n := len(tu.Days) - quotav1alpha1.MaxUsageDays; n > 0 {
		tu.Days = slices.Delete(tu.Days, 0, n)
	}
	return tu
}

// eachDay calls f with each UTC day [from, to) spans and the part of it in that day.
func eachDay(from, to time.Time, f func(date string, a, b time.Time)) {
	from, to = from.Truncate(time.Second).UTC(), to.Truncate(time.Second).UTC()
	for a := from; a.Before(to); {
		next := time.Date(a.Year(), a.Month(), a.Day()+1, 0, 0, 0, 0, time.UTC)
		b := earlier(next, to)
		f(a.Format(DateLayout), a, b)
		a = b
	}
}

// earlier of two times.
func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// Now is a tenant's usage up to now: what is counted and what is held.
func Now(tu *quotav1alpha1.TenantUsage, held []Held, now time.Time) commonv1.ResourceUsage {
	var u commonv1.ResourceUsage
	if tu != nil {
		Add(&u, tu.Total)
	}
	for _, h := range held {
		Add(&u, h.Rate.Over(h.Since, now))
	}
	return u
}

// Window is a tenant's usage over the UTC days from (inclusive) to to
// (exclusive), both at midnight: the days counted and the part of what is
// held that falls in them, up to now. Complete is false when the window
// begins before the oldest day the quota still keeps and after counting
// began: the days in between were dropped.
func Window(tu *quotav1alpha1.TenantUsage, held []Held, from, to, now time.Time) (u commonv1.ResourceUsage, complete bool) {
	complete = true
	first, last := from.UTC().Format(DateLayout), to.UTC().Format(DateLayout)
	if tu != nil {
		for _, d := range tu.Days {
			if d.Date >= first && d.Date < last {
				Add(&u, d.ResourceUsage)
			}
		}
		if len(tu.Days) >= quotav1alpha1.MaxUsageDays && first < tu.Days[0].Date && tu.Since != nil &&
			tu.Since.UTC().Format(DateLayout) < tu.Days[0].Date {
			complete = false
		}
	}
	end := earlier(to, now)
	for _, h := range held {
		a := h.Since
		if a.Before(from) {
			a = from
		}
		Add(&u, h.Rate.Over(a, end))
	}
	return u, complete
}
