// Package lifecycle decides, as pure functions of a workspace's spec, its
// class, its status and the time, whether a workspace is to run, stop or be
// deleted: its expiry, its idle culling and its place in the queues after a
// start. Nothing here reads the cluster or keeps memory, so a restarted
// manager reaches the same verdicts.
package lifecycle

import (
	"time"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// DefaultExpiryWarning is how long before expiry a workspace is warned
// when its class does not say.
const DefaultExpiryWarning = time.Hour

// Action is what a workspace's lifecycle asks for now.
type Action int

// Actions.
const (
	// Run: the workspace is to run (or start again).
	Run Action = iota
	// Stop: the workspace is to stop, keeping its volumes.
	Stop
	// Delete: the workspace has expired under the Delete policy.
	Delete
)

// Input is what a verdict depends on.
type Input struct {
	Now     time.Time
	Created time.Time
	// Spec is the workspace's spec.lifecycle; nil when unset.
	Spec *workspacesv1.WorkspaceLifecycle
	// Class is the class's spec.lifecycle; nil when unset.
	Class *workspacesv1.ClassLifecycle
}

// Verdict is the lifecycle's decision for a workspace.
type Verdict struct {
	Action Action
	// Reason says why it stops (Requested or Expired); empty when it runs.
	Reason workspacesv1.StopReason
	// ExpiresAt is when the workspace expires; zero when it does not.
	ExpiresAt time.Time
	// ExpiresSoon is true from the warning until expiry.
	ExpiresSoon bool
	// Next is the next instant at which the verdict changes by time alone
	// (the warning, or expiry); zero when none.
	Next time.Time
}

// Decide is the lifecycle's verdict at in.Now, idle culling aside: an
// expired workspace stops or is deleted per its class's policy; a workspace
// that asks to be stopped stops.
func Decide(in Input) Verdict {
	v := Verdict{}
	exp, ok := ExpiresAt(in.Spec, in.Class, in.Created)
	if ok {
		v.ExpiresAt = exp
		warnAt := exp.Add(-ExpiryWarning(in.Class))
		switch {
		case !in.Now.Before(exp):
			v.Action, v.Reason = Stop, workspacesv1.StopExpired
			if Policy(in.Class) == workspacesv1.ExpiryDelete {
				v.Action = Delete
			}
			return v
		case !in.Now.Before(warnAt):
			v.ExpiresSoon, v.Next = true, exp
		default:
			v.Next = warnAt
		}
	}
	if in.Spec != nil && in.Spec.Stopped {
		v.Action, v.Reason = Stop, workspacesv1.StopRequested
	}
	return v
}

// ExpiresAt is when a workspace expires: its expireAt, or its creation
// plus its lifetime, or plus its class's defaultLifetime, capped by the
// class's maxLifetime. False when nothing bounds it.
func ExpiresAt(spec *workspacesv1.WorkspaceLifecycle, class *workspacesv1.ClassLifecycle, created time.Time) (time.Time, bool) {
	var at time.Time
	switch {
	case spec != nil && spec.ExpireAt != nil:
		at = spec.ExpireAt.Time
	case spec != nil && spec.Lifetime != nil:
		at = addSaturating(created, spec.Lifetime.Duration)
	case class != nil && class.DefaultLifetime != nil:
		at = addSaturating(created, class.DefaultLifetime.Duration)
	}
	if class != nil && class.MaxLifetime != nil {
		limit := addSaturating(created, class.MaxLifetime.Duration)
		if at.IsZero() || limit.Before(at) {
			at = limit
		}
	}
	return at, !at.IsZero()
}

// ExpiryWarning is how long before expiry a class's workspaces are warned.
func ExpiryWarning(class *workspacesv1.ClassLifecycle) time.Duration {
	if class == nil || class.ExpiryWarning == nil || class.ExpiryWarning.Duration < 0 {
		return DefaultExpiryWarning
	}
	return class.ExpiryWarning.Duration
}

// Policy is a class's expiry policy; Stop when unset.
func Policy(class *workspacesv1.ClassLifecycle) workspacesv1.ExpiryPolicy {
	if class == nil || class.ExpiryPolicy == "" {
		return workspacesv1.ExpiryStop
	}
	return class.ExpiryPolicy
}

// QueuedAt is a workspace's place in the queues for GPUs and quota: when
// it last asked to start, else its creation; after a preemption, the place
// the preemption gave it (its requeue timestamp), from the start that
// followed it.
func QueuedAt(obj *workspacesv1.WorkspaceDeployment) time.Time {
	l := obj.Status.Lifecycle
	if l == nil || l.QueuedAt == nil {
		return obj.CreationTimestamp.Time
	}
	if p := l.Preemption; p != nil && p.QueueAs != nil && !l.QueuedAt.Before(&p.At) {
		return p.QueueAs.Time
	}
	return l.QueuedAt.Time
}

// addSaturating adds d to t; a negative duration (which the API does not
// forbid) counts as none. Durations reach ~292 years, which a time holds.
func addSaturating(t time.Time, d time.Duration) time.Time {
	if d < 0 {
		return t
	}
	return t.Add(d)
}
