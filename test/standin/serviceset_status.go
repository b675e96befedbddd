package standin

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
)

// Reasons and messages of the ServiceSet conditions, as the Sveltos adapter writes them.
const (
	reasonProfileReady       = "ServiceSetProfileReady"
	messageProfileReady      = "Profile is ready"
	reasonStatusesCollected  = "ServiceSetStatusesCollected"
	messageStatusesCollected = "Statuses collected"
)

// patchStatus writes the status when it differs from the object's.
func (s *ServiceSets) patchStatus(ctx context.Context, ss *k0rdentv1beta1.ServiceSet, status *k0rdentv1beta1.ServiceSetStatus) error {
	if equality.Semantic.DeepEqual(&ss.Status, status) {
		return nil
	}
	patch := client.MergeFromWithOptions(ss.DeepCopy(), client.MergeFromWithOptimisticLock{})
	ss.Status = *status
	if err := s.Client.Status().Patch(ctx, ss, patch); err != nil {
		return fmt.Errorf("writing status of ServiceSet %s/%s: %w", ss.Namespace, ss.Name, err)
	}
	return nil
}

// setServiceSetConditions sets the adapter's two conditions, True.
func setServiceSetConditions(status *k0rdentv1beta1.ServiceSetStatus, gen int64) {
	for _, c := range []metav1.Condition{
		{Type: k0rdentv1beta1.ServiceSetProfileCondition, Reason: reasonProfileReady, Message: messageProfileReady},
		{Type: k0rdentv1beta1.ServiceSetStatusesCollectedCondition, Reason: reasonStatusesCollected, Message: messageStatusesCollected},
	} {
		c.Status, c.ObservedGeneration = metav1.ConditionTrue, gen
		meta.SetStatusCondition(&status.Conditions, c)
	}
}

// serviceState returns the state of a service, keeping the transition time
// (and conditions) of its previous state when the state did not change.
func serviceState(prev []k0rdentv1beta1.ServiceState, e *k0rdentv1beta1.ServiceWithValues, state, msg string) k0rdentv1beta1.ServiceState {
	st := k0rdentv1beta1.ServiceState{
		Type: k0rdentv1beta1.ServiceTypeHelm, Name: e.Name, Namespace: e.Namespace, Template: e.Template,
		Version: e.Version, State: state, FailureMessage: msg,
	}
	if p := findState(prev, e.Name, e.Namespace); p != nil && p.State == state && p.LastStateTransitionTime != nil {
		st.LastStateTransitionTime, st.Conditions = p.LastStateTransitionTime, p.Conditions
	} else {
		now := metav1.Now().Rfc3339Copy()
		st.LastStateTransitionTime = &now
	}
	return st
}

// deleting returns a state turned Deleting.
func deleting(st k0rdentv1beta1.ServiceState) k0rdentv1beta1.ServiceState {
	return turned(st, k0rdentv1beta1.ServiceStateDeleting)
}

// turned returns a state turned to state (a Helm service unless typed),
// its transition time now when that changes the state.
func turned(st k0rdentv1beta1.ServiceState, state string) k0rdentv1beta1.ServiceState {
	if st.State != state {
		now := metav1.Now().Rfc3339Copy()
		st.State, st.FailureMessage, st.LastStateTransitionTime = state, "", &now
	}
	if st.Type == "" {
		st.Type = k0rdentv1beta1.ServiceTypeHelm
	}
	return st
}

// findState finds the state of a service (name and namespace).
func findState(states []k0rdentv1beta1.ServiceState, name, namespace string) *k0rdentv1beta1.ServiceState {
	for i := range states {
		if states[i].Name == name && states[i].Namespace == namespace {
			return &states[i]
		}
	}
	return nil
}

// inSpec reports whether the ServiceSet's spec lists the service.
func inSpec(ss *k0rdentv1beta1.ServiceSet, name, namespace string) bool {
	for i := range ss.Spec.Services {
		if ss.Spec.Services[i].Name == name && ss.Spec.Services[i].Namespace == namespace {
			return true
		}
	}
	return false
}

// allDeployed reports whether every state is Deployed (true for none).
func allDeployed(states []k0rdentv1beta1.ServiceState) bool {
	for _, st := range states {
		if st.State != k0rdentv1beta1.ServiceStateDeployed {
			return false
		}
	}
	return true
}
