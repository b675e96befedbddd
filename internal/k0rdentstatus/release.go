package k0rdentstatus

import (
	"time"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
)

// ReleaseOutcome is where a workspace's release stands.
type ReleaseOutcome string

// Outcomes of a release.
const (
	// ReleasePending: not deployed yet, within its deploy timeout.
	ReleasePending ReleaseOutcome = "Pending"
	// ReleaseDeployed: deployed at the ServiceSet's current generation.
	ReleaseDeployed ReleaseOutcome = "Deployed"
	// ReleaseFailed: k0rdent reports the release Failed.
	ReleaseFailed ReleaseOutcome = "Failed"
	// ReleaseTimedOut: pending for longer than the deploy timeout.
	ReleaseTimedOut ReleaseOutcome = "TimedOut"
)

// Release is the verdict on one release of a ServiceSet.
type Release struct {
	Outcome ReleaseOutcome
	// State is the service's state, "" when k0rdent reports none.
	State string
	// FailureMessage is k0rdent's, for a failed release.
	FailureMessage string
	// Seen says what was seen: "no state yet" or "state <State>".
	Seen string
	// Wait is how long a pending release has left before its timeout.
	Wait time.Duration
}

// ReleaseVerdict reads the release name of a ServiceSet: Failed when
// k0rdent reports it failed; Deployed when it reports it deployed and has
// observed the ServiceSet's generation (a deployed state of an older
// generation says nothing of the current one); otherwise Pending, or
// TimedOut once it has waited longer than timeout since since (nil: it has
// not started waiting).
func ReleaseVerdict(ss *k0rdentv1beta1.ServiceSet, name string, since *time.Time, timeout time.Duration, now time.Time) Release {
	var state *k0rdentv1beta1.ServiceState
	for i := range ss.Status.Services {
		if ss.Status.Services[i].Name == name {
			state = &ss.Status.Services[i]
		}
	}
	current := true
	for _, c := range ss.Status.Conditions {
		if c.ObservedGeneration < ss.Generation {
			current = false
		}
	}
	out := Release{Outcome: ReleasePending, Seen: "no state yet"}
	if state != nil {
		out.State, out.FailureMessage, out.Seen = state.State, state.FailureMessage, "state "+state.State
	}
	switch {
	case out.State == k0rdentv1beta1.ServiceStateFailed:
		out.Outcome = ReleaseFailed
		return out
	case out.State == k0rdentv1beta1.ServiceStateDeployed && current:
		out.Outcome = ReleaseDeployed
		return out
	}
	switch {
	case since == nil:
		out.Wait = timeout
	case now.Sub(*since) > timeout:
		out.Outcome = ReleaseTimedOut
	default:
		out.Wait = since.Add(timeout).Sub(now)
	}
	return out
}
