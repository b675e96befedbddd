package standin

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
)

// KCMRelease is the kcm release line whose ServiceSet reports the stand-in
// imitates (ServiceSets.ReportAs, AnnotationReportAs).
type KCMRelease string

// AnnotationReportAs on a ServiceSet overrides ServiceSets.ReportAs for it
// ("v1.12" or "v1.9"), so one stand-in can play both lines in a test.
const AnnotationReportAs = "standin.apiary.dev/report-as"

const (
	// KCM19 reports as kcm 1.8 to 1.10 do, the default: a service removed
	// from a ServiceSet leaves its status once uninstalled, and a ServiceSet
	// carries the adapter's two conditions only.
	KCM19 KCMRelease = ""
	// KCM112 reports as kcm 1.12 does: a removed service stays in the
	// status as Deleted once uninstalled (on a ServiceSet's deletion too,
	// written before kcm's finalizer is released), a Deployed service
	// carries lastDeployedHash (kept while it provisions again), and a
	// ServiceSet carries ServicesInReadyState ("<ready>/<total>").
	KCM112 KCMRelease = "v1.12"
)

// reportAs is the release line a ServiceSet is reported as: its
// AnnotationReportAs, else ReportAs. An annotation naming no line the
// stand-in plays is logged and ignored.
func (s *ServiceSets) reportAs(ctx context.Context, ss *k0rdentv1beta1.ServiceSet) KCMRelease {
	v, ok := ss.Annotations[AnnotationReportAs]
	if !ok {
		return s.ReportAs
	}
	rel := KCMRelease(v)
	if v == KCM19.String() {
		rel = KCM19
	}
	if err := rel.Validate(); err != nil {
		ctrl.LoggerFrom(ctx).Info("ignoring annotation "+AnnotationReportAs, "error", err.Error())
		return s.ReportAs
	}
	return rel
}

// report adds what the release line reports beyond kcm 1.9's status:
// ServicesInReadyState for kcm 1.12.
func (r KCMRelease) report(status *k0rdentv1beta1.ServiceSetStatus, gen int64) {
	if r == KCM112 {
		setServicesInReadyState(status, gen)
	}
}

// reportDeleted writes every service of a deleted ServiceSet as Deleted,
// as kcm 1.12 does once it uninstalled them; older lines write nothing.
func (s *ServiceSets) reportDeleted(ctx context.Context, ss *k0rdentv1beta1.ServiceSet,
	status *k0rdentv1beta1.ServiceSetStatus, rel KCMRelease) error {
	if rel != KCM112 {
		return nil
	}
	next := status.DeepCopy()
	for i := range next.Services {
		next.Services[i] = deletedState(next.Services[i])
	}
	rel.report(next, ss.Generation)
	return s.patchStatus(ctx, ss, next)
}

// String names the release line.
func (r KCMRelease) String() string {
	if r == KCM19 {
		return "v1.9"
	}
	return string(r)
}

// Validate refuses a release line the stand-in cannot play.
func (r KCMRelease) Validate() error {
	if r != KCM19 && r != KCM112 {
		return fmt.Errorf("the stand-in reports like kcm %q or %q, not %q", KCM19.String(), KCM112, string(r))
	}
	return nil
}

// deletedState returns a state turned Deleted, as kcm 1.11+ reports a
// service it removed.
func deletedState(st k0rdentv1beta1.ServiceState) k0rdentv1beta1.ServiceState {
	if st.State != k0rdentv1beta1.ServiceStateDeleted {
		now := metav1.Now().Rfc3339Copy()
		st.State, st.FailureMessage, st.LastStateTransitionTime = k0rdentv1beta1.ServiceStateDeleted, "", &now
	}
	if st.Type == "" {
		st.Type = k0rdentv1beta1.ServiceTypeHelm
	}
	return st
}

// deployedHash returns the lastDeployedHash of a service as kcm 1.12
// reports it: the fingerprint of what it installs when it is Deployed,
// else the one of its previous state (the configuration last confirmed
// Deployed), if any.
func deployedHash(prev []k0rdentv1beta1.ServiceState, st *k0rdentv1beta1.ServiceState, hash string) string {
	if st.State == k0rdentv1beta1.ServiceStateDeployed && hash != "" {
		if len(hash) > 16 {
			hash = hash[:16]
		}
		return hash
	}
	if p := findState(prev, st.Name, st.Namespace); p != nil {
		return p.LastDeployedHash
	}
	return ""
}

// setServicesInReadyState sets a ServiceSet's ServicesInReadyState as kcm
// 1.11+ does: "<ready>/<total>" over the services that are neither Deleting
// nor Deleted, True when all are Deployed.
func setServicesInReadyState(status *k0rdentv1beta1.ServiceSetStatus, gen int64) {
	ready, total := 0, 0
	for _, st := range status.Services {
		if st.State == k0rdentv1beta1.ServiceStateDeleting || st.State == k0rdentv1beta1.ServiceStateDeleted {
			continue
		}
		total++
		if st.State == k0rdentv1beta1.ServiceStateDeployed {
			ready++
		}
	}
	c := metav1.Condition{Type: k0rdentv1beta1.ServiceSetServicesInReadyStateCondition, Status: metav1.ConditionTrue,
		Reason: k0rdentv1beta1.SucceededReason, Message: fmt.Sprintf("%d/%d", ready, total), ObservedGeneration: gen}
	if ready != total {
		c.Status, c.Reason = metav1.ConditionFalse, k0rdentv1beta1.FailedReason
	}
	meta.SetStatusCondition(&status.Conditions, c)
}
