// Package k0rdentstatus reads the state of k0rdent objects the way k0rdent
// means it (see the k0rdent API notes): a ClusterDeployment is ready only when
// k0rdent observed its current generation and reports Ready, and its CAPI
// summary where one exists; a ServiceSet's services are read one by one.
package k0rdentstatus

import (
	"fmt"
	"strings"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
)

// Phase is the state of a k0rdent object as Apiary reports it.
type Phase string

// Phases of a ClusterDeployment.
const (
	PhaseProvisioning Phase = "Provisioning"
	PhaseReady        Phase = "Ready"
	PhaseFailed       Phase = "Failed"
	PhaseDeleting     Phase = "Deleting"
)

// State is a phase with the message behind it. The phase is what a Colony
// shows as the reason of its cluster (commonv1.PhaseReason).
type State struct {
	Phase   Phase
	Message string
}

// blockingConditions are the ClusterDeployment conditions whose False status
// means the cluster cannot progress without a change (a missing or invalid
// template or credential, a chart or release that failed).
var blockingConditions = []string{
	k0rdentv1beta1.TemplateReadyCondition,
	k0rdentv1beta1.CredentialReadyCondition,
	k0rdentv1beta1.HelmChartReadyCondition,
	k0rdentv1beta1.HelmReleaseReadyCondition,
	"DataSourceReady",
	"ClusterDataSourceReady",
	"ClusterAuthenticationReady",
}

// ClusterDeploymentState reads the state of a ClusterDeployment.
func ClusterDeploymentState(cd *k0rdentv1beta1.ClusterDeployment) State {
	if !cd.DeletionTimestamp.IsZero() {
		return State{Phase: PhaseDeleting, Message: "ClusterDeployment is being deleted"}
	}
	if cd.Status.ObservedGeneration < cd.Generation {
		return State{Phase: PhaseProvisioning, Message: fmt.Sprintf("waiting for k0rdent to observe generation %d", cd.Generation)}
	}
	conds := cd.Status.Conditions
	var failed []string
	for _, t := range blockingConditions {
		if c := apimeta.FindStatusCondition(conds, t); c != nil && c.Status == metav1.ConditionFalse {
			failed = append(failed, fmt.Sprintf("%s: %s", t, c.Message))
		}
	}
	if len(failed) > 0 {
		return State{Phase: PhaseFailed, Message: strings.Join(failed, "; ")}
	}
	ready := apimeta.FindStatusCondition(conds, k0rdentv1beta1.ReadyCondition)
	if ready == nil {
		return State{Phase: PhaseProvisioning, Message: "waiting for k0rdent to report readiness"}
	}
	capi := apimeta.FindStatusCondition(conds, k0rdentv1beta1.CAPIClusterSummaryCondition)
	switch {
	case ready.Status == metav1.ConditionTrue && (capi == nil || capi.Status == metav1.ConditionTrue):
		return State{Phase: PhaseReady, Message: "ClusterDeployment is ready"}
	case ready.Status == metav1.ConditionTrue:
		return State{Phase: PhaseProvisioning, Message: "cluster is not provisioned yet: " + capi.Message}
	case capi != nil && capi.Status == metav1.ConditionFalse && capi.Reason == k0rdentv1beta1.FailedReason:
		// kcm's generic Failed reason, not a CAPI progress report.
		return State{Phase: PhaseFailed, Message: capi.Message}
	case ready.Status == metav1.ConditionFalse && ready.Reason == k0rdentv1beta1.FailedReason &&
		strings.HasPrefix(ready.Message, "Cluster is not ready"):
		// k0rdent 1.9 gives up on a CAPI cluster that stays unready for 30 minutes.
		return State{Phase: PhaseFailed, Message: ready.Message}
	default:
		msg := ready.Message
		if msg == "" {
			msg = "waiting for the cluster to become ready"
		}
		return State{Phase: PhaseProvisioning, Message: msg}
	}
}

// ClusterProvisioned reports whether a ClusterDeployment's child cluster is
// up and reachable, whatever the state of the services on it: CAPIClusterSummary
// is True, or, for clusters without a CAPI Cluster, Ready is True or false
// only because services are not ready. Workspaces deploy onto such a cluster:
// k0rdent counts their own services into Ready.
func ClusterProvisioned(cd *k0rdentv1beta1.ClusterDeployment) (bool, string) {
	s := ClusterDeploymentState(cd)
	switch s.Phase {
	case PhaseReady:
		return true, s.Message
	case PhaseFailed, PhaseDeleting:
		return false, s.Message
	}
	if cd.Status.ObservedGeneration < cd.Generation {
		return false, s.Message
	}
	conds := cd.Status.Conditions
	if capi := apimeta.FindStatusCondition(conds, k0rdentv1beta1.CAPIClusterSummaryCondition); capi != nil {
		return capi.Status == metav1.ConditionTrue, s.Message
	}
	services := apimeta.FindStatusCondition(conds, k0rdentv1beta1.ServicesInReadyStateCondition)
	if services == nil || services.Status != metav1.ConditionFalse {
		return false, s.Message
	}
	for _, c := range conds {
		if c.Type != k0rdentv1beta1.ReadyCondition && c.Type != k0rdentv1beta1.ServicesInReadyStateCondition && c.Status != metav1.ConditionTrue {
			return false, s.Message
		}
	}
	return true, "cluster is provisioned; services: " + services.Message
}

// OwnState reads a ClusterDeployment's state as the object that made it
// (a Colony) means it: the cluster and the services of its own
// spec.serviceSpec. k0rdent counts the services every ServiceSet delivers
// onto the cluster (tenants' workspaces) into ServicesInReadyState, and so
// lowers Ready while a workspace deploys; those services do not change the
// owner's state.
func OwnState(cd *k0rdentv1beta1.ClusterDeployment) State {
	s := ClusterDeploymentState(cd)
	if s.Phase != PhaseProvisioning {
		return s
	}
	if ok, _ := ClusterProvisioned(cd); !ok {
		return s
	}
	var waiting []string
	for _, want := range cd.Spec.ServiceSpec.Services {
		if !deployed(cd.Status.Services, want.Name, want.Namespace) {
			waiting = append(waiting, want.Name)
		}
	}
	if len(waiting) > 0 {
		return State{Phase: PhaseProvisioning, Message: "waiting for the cluster's services: " + strings.Join(waiting, ", ")}
	}
	return State{Phase: PhaseReady, Message: "ClusterDeployment is ready (services other ServiceSets deliver onto it are not counted)"}
}

// deployed reports whether a service of that name (and namespace, when
// given) is Deployed among states.
func deployed(states []k0rdentv1beta1.ServiceState, name, namespace string) bool {
	for _, st := range states {
		if st.Name == name && (namespace == "" || st.Namespace == namespace) && st.State == k0rdentv1beta1.ServiceStateDeployed {
			return true
		}
	}
	return false
}
