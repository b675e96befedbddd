package workspace

import (
	"context"
	"fmt"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/gpu"
	"github.com/apiaryhq/apiary/internal/k0rdentstatus"
	"github.com/apiaryhq/apiary/internal/resources"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
)

// resolveClass finds the workspace's class and checks that it is valid.
func (r *Reconciler) resolveClass(ctx context.Context, w *workspaceRun) (stepResult, error) {
	obj := w.obj
	class := &workspacesv1.WorkspaceClass{}
	if err := r.Get(ctx, client.ObjectKey{Name: obj.Spec.WorkspaceClassRef}, class); err != nil {
		if !apierrors.IsNotFound(err) {
			return stopWith(0), fmt.Errorf("reading WorkspaceClass %s: %w", obj.Spec.WorkspaceClassRef, err)
		}
		msg := fmt.Sprintf("WorkspaceClass %q not found", obj.Spec.WorkspaceClassRef)
		conditions.MarkFalse(obj, workspacesv1.ClassResolvedCondition, workspacesv1.ClassNotFoundReason, "%s", msg)
		r.fail(ctx, obj, workspacesv1.ClassNotFoundReason, msg)
		return stopWith(0), nil
	}
	switch {
	case !class.Status.Valid && class.Status.ObservedGeneration <= 0: // -1: the CRD default, never validated
		conditions.MarkUnknown(obj, workspacesv1.ClassResolvedCondition, commonv1.ProgressingReason, "WorkspaceClass %q is not validated yet", class.Name)
		pending(obj, "waiting for WorkspaceClass %q to be validated", class.Name)
		return stopWith(0), nil
	case !class.Status.Valid:
		msg := fmt.Sprintf("WorkspaceClass %q is not valid: %s", class.Name, class.Status.ValidationError)
		conditions.MarkFalse(obj, workspacesv1.ClassResolvedCondition, workspacesv1.ClassInvalidReason, "%s", msg)
		r.fail(ctx, obj, workspacesv1.ClassInvalidReason, msg)
		return stopWith(0), nil
	}
	conditions.MarkTrue(obj, workspacesv1.ClassResolvedCondition, workspacesv1.ClassResolvedReason, "WorkspaceClass %q is valid", class.Name)
	w.class = class
	return proceed, nil
}

// resolveCluster finds the target ClusterDeployment and waits until it is ready.
func (r *Reconciler) resolveCluster(ctx context.Context, w *workspaceRun) (stepResult, error) {
	obj := w.obj
	w.cdKey = plan.ClusterKey(obj)
	if w.cdKey.Namespace != obj.Namespace && r.NoCrossNamespaceRefs {
		msg := fmt.Sprintf("ClusterDeployment %s is in another namespace, and this manager refuses cross-namespace references", w.cdKey)
		conditions.MarkFalse(obj, workspacesv1.ClusterDeploymentResolvedCondition, workspacesv1.CrossNamespaceRefDeniedReason, "%s", msg)
		r.fail(ctx, obj, workspacesv1.CrossNamespaceRefDeniedReason, msg)
		return stopWith(0), nil
	}
	cd := &k0rdentv1beta1.ClusterDeployment{}
	if err := r.Get(ctx, w.cdKey, cd); err != nil {
		if !apierrors.IsNotFound(err) {
			return stopWith(0), fmt.Errorf("reading ClusterDeployment %s: %w", w.cdKey, err)
		}
		msg := fmt.Sprintf("ClusterDeployment %q not found in namespace %q", w.cdKey.Name, w.cdKey.Namespace)
		conditions.MarkFalse(obj, workspacesv1.ClusterDeploymentResolvedCondition, workspacesv1.ClusterDeploymentNotFoundReason, "%s", msg)
		pending(obj, "%s", msg)
		return stopWith(0), nil
	}
	if ok, why := k0rdentstatus.ClusterProvisioned(cd); !ok {
		msg := fmt.Sprintf("ClusterDeployment %s is not ready: %s", w.cdKey, why)
		conditions.MarkFalse(obj, workspacesv1.ClusterDeploymentResolvedCondition, workspacesv1.ClusterNotReadyReason, "%s", msg)
		pending(obj, "%s", msg)
		return stopWith(0), nil
	}
	conditions.MarkTrue(obj, workspacesv1.ClusterDeploymentResolvedCondition, workspacesv1.ClusterDeploymentResolvedReason,
		"ClusterDeployment %s is ready", w.cdKey)
	w.cd = cd
	return proceed, nil
}

// resolveResources merges the class's defaults with the workspace's
// overrides; what they ask for is request.Of's.
func (r *Reconciler) resolveResources(ctx context.Context, w *workspaceRun) (stepResult, error) {
	w.resolved = plan.Resources(w.class, w.obj)
	if err := checkResources(w.resolved); err != nil && w.stopping != "" {
		return r.pauseDelivered(ctx, w, err.Error()) // Git mode: the stop goes on without rendering
	} else if err != nil {
		conditions.MarkFalse(w.obj, workspacesv1.ConfigResolvedCondition, workspacesv1.InvalidResourcesReason, "%s", err)
		r.fail(ctx, w.obj, workspacesv1.InvalidResourcesReason, err.Error())
		return stopWith(0), nil
	}
	return proceed, nil
}

// pending puts the workspace in Pending with a message.
func pending(obj *workspacesv1.WorkspaceDeployment, format string, args ...any) {
	obj.Status.Phase = workspacesv1.PhasePending
	obj.Status.Message = fmt.Sprintf(format, args...)
}

// deployTimeout is the class's deployTimeout, 15m by default.
func deployTimeout(class *workspacesv1.WorkspaceClass) time.Duration {
	return plan.DeployTimeout(class)
}

// checkResources refuses resources Apiary cannot admit: amounts beyond its
// bounds (whose products could overflow) and an unknown GPU vendor.
func checkResources(res workspacesv1.WorkspaceResourceSpec) error {
	if err := resources.Check(res); err != nil {
		return err
	}
	if pr := res.PerReplica; pr != nil && pr.GPUVendor != nil {
		if _, err := gpu.ResourceFor(string(*pr.GPUVendor)); err != nil {
			return err
		}
	}
	return nil
}
