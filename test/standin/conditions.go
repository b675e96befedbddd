package standin

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
)

// setCondition sets one condition of a ClusterDeployment status.
func setCondition(status *k0rdentv1beta1.ClusterDeploymentStatus, gen int64, typ string, ok bool, reason, msg string) {
	s := metav1.ConditionFalse
	if ok {
		s = metav1.ConditionTrue
	}
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type: typ, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen,
	})
}

// setReady aggregates the other conditions into Ready, following kcm v1.9.0:
// Deleting wins; any other False condition fails (messages joined); a
// provisioning cluster or unready services are Progressing; Unknown
// conditions are Progressing; otherwise the object is ready.
func setReady(status *k0rdentv1beta1.ClusterDeploymentStatus, gen int64) {
	set := func(s metav1.ConditionStatus, reason, msg string) {
		meta.SetStatusCondition(&status.Conditions, metav1.Condition{
			Type: k0rdentv1beta1.ReadyCondition, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen,
		})
	}
	var failed []string
	var capi, services *metav1.Condition
	unknown, others := false, 0
	for i := range status.Conditions {
		c := &status.Conditions[i]
		switch c.Type {
		case k0rdentv1beta1.ReadyCondition:
			continue
		case k0rdentv1beta1.DeletingCondition:
			others++
			if c.Status == metav1.ConditionTrue {
				set(metav1.ConditionFalse, k0rdentv1beta1.DeletingReason, c.Message)
				return
			}
		case k0rdentv1beta1.CAPIClusterSummaryCondition:
			others++
			capi = c
		case k0rdentv1beta1.ServicesInReadyStateCondition:
			others++
			services = c
		default:
			others++
			if c.Status == metav1.ConditionFalse {
				failed = append(failed, c.Message)
			}
		}
		if c.Status == metav1.ConditionUnknown {
			unknown = true
		}
	}
	switch {
	case len(failed) > 0:
		set(metav1.ConditionFalse, k0rdentv1beta1.FailedReason, strings.Join(failed, "; "))
	case capi != nil && capi.Status == metav1.ConditionFalse && capi.Reason == k0rdentv1beta1.ProgressingReason:
		set(metav1.ConditionFalse, k0rdentv1beta1.ProgressingReason, capi.Message)
	case capi != nil && capi.Status == metav1.ConditionFalse:
		set(metav1.ConditionFalse, k0rdentv1beta1.FailedReason, capi.Message)
	case services != nil && services.Status == metav1.ConditionFalse:
		set(metav1.ConditionFalse, k0rdentv1beta1.ProgressingReason, "Services are not ready: "+services.Message)
	case unknown || others == 0:
		set(metav1.ConditionUnknown, k0rdentv1beta1.ProgressingReason, "Object is progressing")
	default:
		set(metav1.ConditionTrue, k0rdentv1beta1.SucceededReason, ReadyMessage)
	}
}

// countServices counts the services and those Deployed, as kcm's
// ServicesInReadyState does: a service (name and namespace) is ready when
// any state reports it Deployed; Deleting and Deleted (kcm 1.11+) services
// are ignored.
func countServices(states []k0rdentv1beta1.ServiceState) (ready, total int) {
	type key struct{ name, namespace string }
	deployed := map[key]bool{}
	for _, st := range states {
		if st.State == k0rdentv1beta1.ServiceStateDeleting || st.State == k0rdentv1beta1.ServiceStateDeleted {
			continue
		}
		k := key{st.Name, st.Namespace}
		deployed[k] = deployed[k] || st.State == k0rdentv1beta1.ServiceStateDeployed
	}
	for _, ok := range deployed {
		if ok {
			ready++
		}
	}
	return ready, len(deployed)
}
