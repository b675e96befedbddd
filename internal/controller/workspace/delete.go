package workspace

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/reconciler"
	"github.com/apiaryhq/apiary/internal/controller/workspace/routing"
	"github.com/apiaryhq/apiary/internal/delivery/canon"
	"github.com/apiaryhq/apiary/internal/naming"
	"github.com/apiaryhq/apiary/internal/wake"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
)

// deletionInventory is what deleting a directly delivered workspace
// removes: its recorded inventory, and its ServiceSet and values Secret by
// their names. A
// manager stopped between applying the ServiceSet and recording the
// inventory (killed, evicted) leaves them out of it, and they must not
// outlive the workspace. The sink removes only objects that belong to the
// workspace (its owner labels, or, for a ServiceSet the exalsius operator
// wrote and Apiary has not written yet, an ownerReference to it and no
// Apiary owner labels), so naming one that is not there, or that another
// owner holds, removes nothing. (In Git mode the sink's sweep removes the
// files of workspaces that are gone.)
func deletionInventory(obj *workspacesv1.WorkspaceDeployment) *commonv1.ResourceInventory {
	cd := plan.ClusterKey(obj)
	named := func(apiVersion, kind, name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		u.SetNamespace(cd.Namespace)
		u.SetName(name)
		return u
	}
	objs := []*unstructured.Unstructured{
		named(k0rdentv1beta1.GroupVersion.String(), "ServiceSet", serviceSetName(obj)),
		named("v1", "Secret", plan.ValuesSecretName(cd.Name, obj.Name)),
	}
	inv := canon.NewInventory(objs)
	if obj.Status.Delivery == nil || obj.Status.Delivery.Inventory == nil {
		return inv
	}
	known := map[string]bool{}
	out := obj.Status.Delivery.Inventory.DeepCopy()
	for _, e := range out.Entries {
		known[e.ID] = true
	}
	for _, e := range inv.Entries {
		if !known[e.ID] {
			out.Entries = append(out.Entries, e)
		}
	}
	return out
}

// reconcileDelete removes the workspace in order: its routes on the
// regional cluster (awaited, so its pool ports are free), its ServiceSet
// (awaited, so the release is uninstalled), then its namespace on the
// child, then the finalizer. Prerequisites stay: other workspaces may use
// them (with --prerequisite-grace-period, the prerequisite controller
// removes those left unused).
func (r *Reconciler) reconcileDelete(ctx context.Context, w *workspaceRun) (ctrl.Result, error) {
	obj := w.obj
	if !controllerutil.ContainsFinalizer(obj, workspacesv1.WorkspaceDeploymentFinalizer) {
		return ctrl.Result{}, nil
	}
	obj.Status.Phase = workspacesv1.PhaseDeleting
	var regional types.NamespacedName
	if obj.Status.Routes != nil {
		obj.Status.Message = "deleting the workspace's routes on the regional cluster"
		regional, _ = naming.ParseKey(obj.Status.Routes.Cluster)
	}
	done, err := r.routing.Drop(ctx, obj)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("deleting the workspace's routes: %w", err)
	}
	if !done {
		return r.awaitRemoval(w), nil
	}
	if regional.Name != "" {
		r.Sweeper.Trigger(regional)
	}
	obj.Status.Message = "deleting the workspace's ServiceSet"
	if err := r.unpause(ctx, obj); err != nil {
		return ctrl.Result{}, err
	}
	var inv *commonv1.ResourceInventory
	if obj.Status.Delivery != nil {
		inv = obj.Status.Delivery.Inventory
	}
	g, err := reconciler.GitOf(ctx, r.Sink, obj.Namespace)
	if err != nil {
		return ctrl.Result{}, err
	}
	if g == nil {
		inv = deletionInventory(obj)
	}
	done, err = r.Sink.Delete(ctx, r.owner(obj), inv)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("deleting the workspace's ServiceSet: %w", err)
	}
	if !done {
		return r.awaitRemoval(w), nil
	}
	if err := r.releaseQuotas(ctx, w); err != nil {
		return ctrl.Result{}, err
	}
	cdKey := plan.ClusterKey(obj)
	r.forget(cdKey, obj)
	if r.Children != nil {
		r.Children.Release(cdKey, workspaceWatchOwner(obj))
		r.Children.ReleaseElsewhere(routing.WatchOwner(obj))
	}
	obj.Status.Message = "deleting the workspace's namespace on the child cluster"
	if err := r.deleteChildNamespace(ctx, obj, cdKey); err != nil {
		return ctrl.Result{}, err
	}
	controllerutil.RemoveFinalizer(obj, workspacesv1.WorkspaceDeploymentFinalizer)
	return ctrl.Result{}, nil
}

// awaitRemoval waits for what the sink removes: in Git mode, Flux pruning
// the commit wakes the workspace (waitSync); the requeue is the safety net,
// and the only wake-up of a direct deletion that waits for a finalizer.
func (r *Reconciler) awaitRemoval(w *workspaceRun) ctrl.Result {
	w.waitFor(wake.Topic{Kind: waitSync})
	return ctrl.Result{RequeueAfter: 5 * time.Second}
}

// deleteChildNamespace deletes ws-<name> on the child when it is the
// workspace's. It is skipped when the cluster is gone or going: its teardown
// removes everything.
func (r *Reconciler) deleteChildNamespace(ctx context.Context, obj *workspacesv1.WorkspaceDeployment, cdKey types.NamespacedName) error {
	cd := &k0rdentv1beta1.ClusterDeployment{}
	if err := r.Get(ctx, cdKey, cd); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("reading ClusterDeployment %s: %w", cdKey, err)
	}
	if !cd.DeletionTimestamp.IsZero() {
		return nil
	}
	return r.namespaces.Delete(ctx, obj, cdKey)
}
