package lifecycle

import (
	"time"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// Bounds of the activity check period.
const (
	minCheckPeriod = 30 * time.Second
	maxCheckPeriod = 5 * time.Minute
)

// Activity is what an activity source last said of a workspace.
type Activity struct {
	// Known is false when the source could not say (no answer, an error,
	// no series): an unknown activity never culls.
	Known bool
	// Last is the newest activity the source reported.
	Last time.Time
	// At is when the source was asked, on the reader's clock (which is
	// the reconciler's): idle time is measured at At, so that the source's
	// "now" and the decision's are one instant. Zero for a reader that
	// answers at once (then the decision's now is used).
	At time.Time
	// Pending is true when no answer is ready yet: the reader asks the
	// source off the caller's goroutine and wakes the workspace when the
	// answer comes. A pending activity decides nothing.
	Pending bool
	// Refused is true when the source was not asked because what it
	// names is not what the workspace's release made; Detail says why.
	Refused bool
	// Detail says, in a bounded printable text, what the source answered
	// or why it could not.
	Detail string
}

// IdleVerdict is the idle policy's decision for a running workspace.
type IdleVerdict struct {
	// Cull is true when the workspace is to be stopped as idle.
	Cull bool
	// IdleFor is how long the workspace has been idle, when known.
	IdleFor time.Duration
	// Next is when to ask the source again.
	Next time.Time
}

// CheckPeriod is how often a policy's source is asked: a quarter of its
// After, between 30 s and 5 min.
func CheckPeriod(p *workspacesv1.IdlePolicy) time.Duration {
	d := p.After.Duration / 4
	return min(max(d, minCheckPeriod), maxCheckPeriod)
}

// MinRuntime is how long a workspace runs before it may be culled.
func MinRuntime(p *workspacesv1.IdlePolicy) time.Duration {
	if p.MinRuntime != nil && p.MinRuntime.Duration > 0 {
		return p.MinRuntime.Duration
	}
	return p.After.Duration
}

// DecideIdle culls a workspace that has run at least the policy's
// MinRuntime (since runningSince) and whose last known activity, or its
// start when the activity is older, lies at least After in the past. A
// workspace with unknown activity, or without a start, is kept; a time in
// the future counts as now.
func DecideIdle(p *workspacesv1.IdlePolicy, now, runningSince time.Time, a Activity) IdleVerdict {
	v := IdleVerdict{Next: now.Add(CheckPeriod(p))}
	if p == nil || p.After.Duration <= 0 || runningSince.IsZero() || !a.Known {
		return v
	}
	last := a.Last
	if last.Before(runningSince) {
		last = runningSince // idle time counts from the (re)start at the earliest
	}
	if last.After(now) {
		last = now
	}
	v.IdleFor = now.Sub(last)
	ran := now.Sub(runningSince)
	v.Cull = v.IdleFor >= p.After.Duration && ran >= MinRuntime(p)
	return v
}
