package k0rdentstatus

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
)

// TestReleaseVerdict: the release state × the ServiceSet's observed
// generation × the deploy timeout.
func TestReleaseVerdict(t *testing.T) {
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) *time.Time { t := now.Add(-d); return &t }
	ss := func(generation, observed int64, states ...k0rdentv1beta1.ServiceState) *k0rdentv1beta1.ServiceSet {
		s := &k0rdentv1beta1.ServiceSet{ObjectMeta: metav1.ObjectMeta{Generation: generation}}
		s.Status.Services = states
		if observed > 0 {
			s.Status.Conditions = []metav1.Condition{{Type: "ServiceSetProfile", Status: "True", ObservedGeneration: observed}}
		}
		return s
	}
	svc := func(name, state string) k0rdentv1beta1.ServiceState {
		return k0rdentv1beta1.ServiceState{Name: name, State: state, FailureMessage: "boom"}
	}
	withHash := func(s k0rdentv1beta1.ServiceState) k0rdentv1beta1.ServiceState {
		s.LastDeployedHash = "5f0c1e"
		return s
	}
	const timeout = 10 * time.Minute
	cases := []struct {
		name    string
		ss      *k0rdentv1beta1.ServiceSet
		since   *time.Time
		outcome ReleaseOutcome
		seen    string
		wait    time.Duration
	}{
		{"deployed and observed", ss(2, 2, svc("r", k0rdentv1beta1.ServiceStateDeployed)), ago(time.Minute), ReleaseDeployed, "state Deployed", 0},
		{"deployed without conditions", ss(1, 0, svc("r", k0rdentv1beta1.ServiceStateDeployed)), nil, ReleaseDeployed, "state Deployed", 0},
		{"deployed at an older generation", ss(3, 2, svc("r", k0rdentv1beta1.ServiceStateDeployed)), ago(time.Minute), ReleasePending, "state Deployed", 9 * time.Minute},
		{"failed", ss(2, 2, svc("r", k0rdentv1beta1.ServiceStateFailed)), ago(time.Minute), ReleaseFailed, "state Failed", 0},
		{"failed at an older generation still fails", ss(3, 2, svc("r", k0rdentv1beta1.ServiceStateFailed)), nil, ReleaseFailed, "state Failed", 0},
		{"provisioning", ss(1, 1, svc("r", k0rdentv1beta1.ServiceStateProvisioning)), ago(4 * time.Minute), ReleasePending, "state Provisioning", 6 * time.Minute},
		{"another release's state", ss(1, 1, svc("other", k0rdentv1beta1.ServiceStateDeployed)), nil, ReleasePending, "no state yet", timeout},
		{"no state past the timeout", ss(1, 1), ago(11 * time.Minute), ReleaseTimedOut, "no state yet", 0},
		{"provisioning past the timeout", ss(1, 1, svc("r", k0rdentv1beta1.ServiceStateProvisioning)), ago(timeout + time.Second), ReleaseTimedOut, "state Provisioning", 0},
		{"at the timeout exactly", ss(1, 1), ago(timeout), ReleasePending, "no state yet", 0},
		// kcm 1.11+: a Deleted release is gone, never pending, whatever the
		// generation and the time waited.
		{"deleted", ss(1, 1, svc("r", k0rdentv1beta1.ServiceStateDeleted)), ago(time.Minute), ReleaseDeleted, "state Deleted", 0},
		{"deleted at an older generation", ss(3, 2, svc("r", k0rdentv1beta1.ServiceStateDeleted)), nil, ReleaseDeleted, "state Deleted", 0},
		{"deleted past the timeout", ss(1, 1, svc("r", k0rdentv1beta1.ServiceStateDeleted)), ago(time.Hour), ReleaseDeleted, "state Deleted", 0},
		{"deleting is on its way out, still pending", ss(1, 1, svc("r", k0rdentv1beta1.ServiceStateDeleting)), ago(time.Minute), ReleasePending, "state Deleting", 9 * time.Minute},
		{"another release deleted", ss(1, 1, svc("other", k0rdentv1beta1.ServiceStateDeleted), svc("r", k0rdentv1beta1.ServiceStateDeployed)), nil, ReleaseDeployed, "state Deployed", 0},
		{"a deleted entry beside a live one", ss(1, 1, svc("r", k0rdentv1beta1.ServiceStateProvisioning), svc("r", k0rdentv1beta1.ServiceStateDeleted)), nil, ReleasePending, "state Provisioning", timeout},
		{"a live entry beside a deleted one", ss(1, 1, svc("r", k0rdentv1beta1.ServiceStateDeleted), svc("r", k0rdentv1beta1.ServiceStateDeployed)), nil, ReleaseDeployed, "state Deployed", 0},
		// kcm 1.12: a Provisioning state with a lastDeployedHash is an
		// upgrade of a deployed release, still pending.
		{"provisioning after a deploy (1.12)", ss(2, 2, withHash(svc("r", k0rdentv1beta1.ServiceStateProvisioning))), ago(time.Minute), ReleasePending, "state Provisioning", 9 * time.Minute},
		{"deployed with its hash (1.12)", ss(2, 2, withHash(svc("r", k0rdentv1beta1.ServiceStateDeployed))), nil, ReleaseDeployed, "state Deployed", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got := ReleaseVerdict(tc.ss, "r", tc.since, timeout, now)
			g.Expect(got.Outcome).To(Equal(tc.outcome))
			g.Expect(got.Seen).To(Equal(tc.seen))
			g.Expect(got.Wait).To(Equal(tc.wait))
		})
	}
}
