package prerequisite

import (
	"time"
)

// AnnotationUnusedSince, on a shared prerequisite ServiceSet, records
// (RFC 3339, UTC) when the last workspace that needed it went. It lives on
// the object so that a restart neither resets nor loses the deadline.
const AnnotationUnusedSince = "apiary.exalsius.ai/prerequisite-unused-since"

// RemovalAction is what to do with an install of a prerequisite, given
// whether workspaces need it.
type RemovalAction string

// Actions of a Removal.
const (
	// Stay: nothing to do.
	Stay RemovalAction = "Stay"
	// MarkUnused: record Since as the time the install became unused.
	MarkUnused RemovalAction = "MarkUnused"
	// ClearUnused: a workspace needs the install again; drop the record.
	ClearUnused RemovalAction = "ClearUnused"
	// Wait: unused, but the grace period has not passed.
	Wait RemovalAction = "Wait"
	// Remove: unused for the whole grace period; delete the install.
	Remove RemovalAction = "Remove"
)

// Removal is the outcome of PlanRemoval.
type Removal struct {
	Action RemovalAction
	// Since is the time to record, for MarkUnused.
	Since time.Time
	// After is how long until the install is due for removal, for
	// MarkUnused and Wait.
	After time.Duration
}

// PlanRemoval decides the removal of an install with grace period grace
// (zero or less: never remove). needed says whether a workspace that is not
// being deleted needs it; lastGone is the latest deletion time of the
// workspaces being deleted that need it (zero for none); recorded is the
// time recorded in AnnotationUnusedSince (zero for none).
//
// The install became unused when the last workspace needing it went: at
// lastGone, or, when no such workspace is left to tell, at the first
// reconcile that finds none (now). A record older than lastGone is moved to
// it, so a workspace that came and went meanwhile restarts the clock. Times
// are recorded rounded up to the second (the precision of the record), so an
// install is never removed before grace has passed.
func PlanRemoval(needed bool, lastGone, recorded time.Time, grace time.Duration, now time.Time) Removal {
	switch {
	case grace <= 0:
		return Removal{Action: Stay}
	case needed && !recorded.IsZero():
		return Removal{Action: ClearUnused}
	case needed:
		return Removal{Action: Stay}
	}
	since := recorded
	if lastGone = ceilSecond(lastGone); lastGone.After(since) {
		since = lastGone
	}
	if since.IsZero() {
		since = ceilSecond(now)
	}
	left := since.Add(grace).Sub(now)
	switch {
	case left <= 0:
		return Removal{Action: Remove}
	case !since.Equal(recorded):
		return Removal{Action: MarkUnused, Since: since, After: left}
	}
	return Removal{Action: Wait, After: left}
}

func ceilSecond(t time.Time) time.Time {
	s := t.Truncate(time.Second)
	if s.Before(t) {
		s = s.Add(time.Second)
	}
	return s
}

// UnusedSince reads AnnotationUnusedSince from annotations; zero when it is
// absent or does not parse (the clock then starts again).
func UnusedSince(annotations map[string]string) time.Time {
	v, ok := annotations[AnnotationUnusedSince]
	if !ok {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}
	}
	return t
}

// FormatUnusedSince is the value of AnnotationUnusedSince for a time.
func FormatUnusedSince(t time.Time) string { return t.UTC().Format(time.RFC3339) }
