package standin

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
)

// Condition messages of the stand-in.
const (
	// MessageProvisioning is the CAPIClusterSummary message while the cluster provisions.
	MessageProvisioning = "Cluster is provisioning"
)

// reconcileNormal validates the references, provisions the cluster and
// writes the status when it changed.
func (s *StandIn) reconcileNormal(ctx context.Context, cd *k0rdentv1beta1.ClusterDeployment) (reconcile.Result, error) {
	status := cd.Status.DeepCopy()
	gen := cd.Generation
	status.ObservedGeneration = gen

	valid, err := s.checkTemplate(ctx, cd, status)
	if err != nil {
		return reconcile.Result{}, err
	}
	credOK, err := s.checkCredential(ctx, cd, status)
	if err != nil {
		return reconcile.Result{}, err
	}

	var result reconcile.Result
	if valid && credOK {
		if result, err = s.provision(ctx, cd, status); err != nil {
			return reconcile.Result{}, err
		}
	}
	setReady(status, gen)
	if err := s.patchStatus(ctx, cd, status); err != nil {
		return reconcile.Result{}, err
	}
	return result, nil
}

// checkTemplate sets TemplateReady (and k8sVersion) from the ClusterTemplate.
func (s *StandIn) checkTemplate(ctx context.Context, cd *k0rdentv1beta1.ClusterDeployment, status *k0rdentv1beta1.ClusterDeploymentStatus) (bool, error) {
	key := types.NamespacedName{Namespace: cd.Namespace, Name: cd.Spec.Template}
	tpl := &k0rdentv1beta1.ClusterTemplate{}
	switch err := s.Client.Get(ctx, key, tpl); {
	case apierrors.IsNotFound(err):
		setCondition(status, cd.Generation, k0rdentv1beta1.TemplateReadyCondition, false, k0rdentv1beta1.FailedReason,
			fmt.Sprintf("ClusterTemplate %s not found", key))
		return false, nil
	case err != nil:
		return false, fmt.Errorf("getting ClusterTemplate %s: %w", key, err)
	case !tpl.Status.Valid:
		msg := fmt.Sprintf("ClusterTemplate %s is not valid", key)
		if tpl.Status.ValidationError != "" {
			msg += ": " + tpl.Status.ValidationError
		}
		setCondition(status, cd.Generation, k0rdentv1beta1.TemplateReadyCondition, false, k0rdentv1beta1.FailedReason, msg)
		return false, nil
	}
	setCondition(status, cd.Generation, k0rdentv1beta1.TemplateReadyCondition, true, k0rdentv1beta1.SucceededReason, "Template is valid")
	status.KubernetesVersion = tpl.Status.KubernetesVersion
	return true, nil
}

// checkCredential sets CredentialReady (and region) from the Credential, or
// removes the condition when the ClusterDeployment names none.
func (s *StandIn) checkCredential(ctx context.Context, cd *k0rdentv1beta1.ClusterDeployment, status *k0rdentv1beta1.ClusterDeploymentStatus) (bool, error) {
	if cd.Spec.Credential == "" {
		meta.RemoveStatusCondition(&status.Conditions, k0rdentv1beta1.CredentialReadyCondition)
		return true, nil
	}
	key := types.NamespacedName{Namespace: cd.Namespace, Name: cd.Spec.Credential}
	cred := &k0rdentv1beta1.Credential{}
	switch err := s.Client.Get(ctx, key, cred); {
	case apierrors.IsNotFound(err):
		setCondition(status, cd.Generation, k0rdentv1beta1.CredentialReadyCondition, false, k0rdentv1beta1.FailedReason,
			fmt.Sprintf("Credential %s not found", key))
		return false, nil
	case err != nil:
		return false, fmt.Errorf("getting Credential %s: %w", key, err)
	case !cred.Status.Ready:
		setCondition(status, cd.Generation, k0rdentv1beta1.CredentialReadyCondition, false, k0rdentv1beta1.FailedReason,
			fmt.Sprintf("Credential %s is not ready", key))
		return false, nil
	}
	setCondition(status, cd.Generation, k0rdentv1beta1.CredentialReadyCondition, true, k0rdentv1beta1.SucceededReason, "Credential is ready")
	status.Region = cred.Spec.Region
	return true, nil
}

// provision plays the cluster's provisioning: failure on AnnotationFail,
// Progressing until AnnotationDelay elapsed, then the kubeconfig Secret,
// CAPIClusterSummary True and the services.
func (s *StandIn) provision(ctx context.Context, cd *k0rdentv1beta1.ClusterDeployment, status *k0rdentv1beta1.ClusterDeploymentStatus) (reconcile.Result, error) {
	if msg, ok := cd.Annotations[AnnotationFail]; ok {
		if err := s.deleteKubeconfig(ctx, cd); err != nil {
			return reconcile.Result{}, err
		}
		s.provisioning.forget(cd.UID)
		setCondition(status, cd.Generation, k0rdentv1beta1.CAPIClusterSummaryCondition, false, k0rdentv1beta1.FailedReason, msg)
		return reconcile.Result{}, nil
	}
	delay, err := delayOf(cd)
	if err != nil {
		setCondition(status, cd.Generation, k0rdentv1beta1.CAPIClusterSummaryCondition, false, k0rdentv1beta1.FailedReason, err.Error())
		return reconcile.Result{}, nil
	}
	// A provisioned cluster stays provisioned, also across restarts of the stand-in.
	if !meta.IsStatusConditionTrue(status.Conditions, k0rdentv1beta1.CAPIClusterSummaryCondition) {
		if wait := time.Until(s.provisioning.since(cd.UID).Add(delay)); wait > 0 {
			setCondition(status, cd.Generation, k0rdentv1beta1.CAPIClusterSummaryCondition, false,
				k0rdentv1beta1.ProgressingReason, MessageProvisioning)
			return reconcile.Result{RequeueAfter: wait}, nil
		}
	}
	if err := s.writeKubeconfig(ctx, cd); err != nil {
		return reconcile.Result{}, err
	}
	setCondition(status, cd.Generation, k0rdentv1beta1.CAPIClusterSummaryCondition, true, k0rdentv1beta1.SucceededReason, "Cluster is provisioned")
	if s.Services == nil || s.ServicesUnreported {
		return reconcile.Result{}, nil
	}
	states, err := s.Services.ServiceStates(ctx, cd)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("collecting the services of ClusterDeployment %s/%s: %w", cd.Namespace, cd.Name, err)
	}
	status.Services = states
	ready, total := countServices(states)
	reason := k0rdentv1beta1.SucceededReason
	if ready != total {
		reason = k0rdentv1beta1.FailedReason
	}
	setCondition(status, cd.Generation, k0rdentv1beta1.ServicesInReadyStateCondition, ready == total, reason,
		fmt.Sprintf("%d/%d", ready, total))
	return reconcile.Result{}, nil
}

// patchStatus writes the status when it differs from the object's.
func (s *StandIn) patchStatus(ctx context.Context, cd *k0rdentv1beta1.ClusterDeployment, status *k0rdentv1beta1.ClusterDeploymentStatus) error {
	if equality.Semantic.DeepEqual(&cd.Status, status) {
		return nil
	}
	patch := client.MergeFrom(cd.DeepCopy())
	cd.Status = *status
	if err := s.Client.Status().Patch(ctx, cd, patch); err != nil {
		return fmt.Errorf("writing status of ClusterDeployment %s/%s: %w", cd.Namespace, cd.Name, err)
	}
	return nil
}
