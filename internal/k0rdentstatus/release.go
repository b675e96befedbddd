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
	// ReleaseDeleted: k0rdent reports the release Deleted (kcm v1.11 and
	// later): it is gone, not on its way.
	ReleaseDeleted ReleaseOutcome = "Deleted"
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
// k0rdent reports it failed; Deleted when it reports it deleted; Deployed
// when it reports it deployed and has observed the ServiceSet's generation
// (a deployed state of an older generation says nothing of the current
// one); otherwise Pending, or TimedOut once it has waited longer than
// timeout since since (nil: it has not started waiting). Failed and Deleted
// are read at any generation, as they are of the release that runs now.
//
// The per-service state is the verdict: kcm 1.12's lastDeployedHash is a
// fingerprint Apiary cannot recompute (kcm already uses it to keep a
// service Deployed through unrelated applies), and the ServiceSet's
// ServicesInReadyState condition (kcm 1.11+) counts the same states, so
// neither makes the verdict more exact. Both are carried, not read.
func ReleaseVerdict(ss *k0rdentv1beta1.ServiceSet, name string, since *time.Time, timeout time.Duration, now time.Time) Release {
	state := releaseState(ss.Status.Services, name)
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
	case out.State == k0rdentv1beta1.ServiceStateDeleted:
		out.Outcome = ReleaseDeleted
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

// releaseState finds the state of a release: the last one named so that is
// not Deleted, else the Deleted one (a Deleted entry beside a live one is of
// an earlier install).
func releaseState(states []k0rdentv1beta1.ServiceState, name string) *k0rdentv1beta1.ServiceState {
	var live, deleted *k0rdentv1beta1.ServiceState
	for i := range states {
		switch {
		case states[i].Name != name:
		case states[i].State == k0rdentv1beta1.ServiceStateDeleted:
			deleted = &states[i]
		default:
			live = &states[i]
		}
	}
	if live != nil {
		return live
	}
	return deleted
}
