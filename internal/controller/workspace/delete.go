package workspace

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/reconciler"
	"github.com/apiaryhq/apiary/internal/delivery"
	"github.com/apiaryhq/apiary/internal/naming"
	"github.com/apiaryhq/apiary/internal/quota"
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
	inv := delivery.NewInventory(objs)
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
	done, err := r.dropRoutes(ctx, obj)
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
	var inv *commonv1.ResourceInventory
	if obj.Status.Delivery != nil {
		inv = obj.Status.Delivery.Inventory
	}
	if reconciler.AsGit(r.Sink) == nil {
		inv = deletionInventory(obj)
	}
	done, err = r.Sink.Delete(ctx, workspaceOwner(obj), inv)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("deleting the workspace's ServiceSet: %w", err)
	}
	if !done {
		return r.awaitRemoval(w), nil
	}
	if err := r.releaseQuotas(ctx, obj); err != nil {
		return ctrl.Result{}, err
	}
	cdKey := plan.ClusterKey(obj)
	r.forget(cdKey, obj)
	if r.Children != nil {
		r.Children.Release(cdKey, workspaceWatchOwner(obj))
		r.Children.ReleaseElsewhere(routesWatchOwner(obj))
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

// dropRoutes deletes the routes recorded on the workspace's status from
// their regional cluster (routes and Services first, awaited, so that their
// pool ports are free; then the namespace, not awaited), frees the
// workspace's pool ports and forgets the routes. A regional cluster that is
// gone or going takes its routes with it. It reports done=false while routes
// remain.
func (r *Reconciler) dropRoutes(ctx context.Context, obj *workspacesv1.WorkspaceDeployment) (bool, error) {
	self := client.ObjectKeyFromObject(obj)
	release := func() {
		if r.ports != nil {
			r.ports.Release(self)
		}
	}
	rs := obj.Status.Routes
	if rs == nil {
		release()
		return true, nil
	}
	key, ok := naming.ParseKey(rs.Cluster)
	if ok && r.RouteSinks != nil && rs.Delivery != nil && rs.Delivery.Inventory != nil && len(rs.Delivery.Inventory.Entries) > 0 {
		cd := &k0rdentv1beta1.ClusterDeployment{}
		err := r.Get(ctx, key, cd)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return false, fmt.Errorf("reading regional ClusterDeployment %s: %w", key, err)
		case cd.DeletionTimestamp.IsZero():
			sink, err := r.RouteSinks.For(ctx, key)
			if err != nil {
				return false, err
			}
			routes, namespaces := splitNamespaces(rs.Delivery.Inventory)
			done, err := sink.Delete(ctx, routesOwner(obj), routes)
			if err != nil {
				return false, fmt.Errorf("deleting the routes on regional cluster %s: %w", key, err)
			}
			if !done {
				return false, nil
			}
			// A namespace terminates on its own; its deletion is not awaited.
			if _, err := sink.Delete(ctx, routesOwner(obj), namespaces); err != nil {
				return false, fmt.Errorf("deleting the routes' namespace on regional cluster %s: %w", key, err)
			}
		}
	}
	release()
	obj.Status.Routes = nil
	return true, nil
}

// splitNamespaces splits an inventory into its namespaces and the rest.
func splitNamespaces(inv *commonv1.ResourceInventory) (rest, namespaces *commonv1.ResourceInventory) {
	rest, namespaces = &commonv1.ResourceInventory{}, &commonv1.ResourceInventory{}
	for _, e := range inv.Entries {
		if id, err := delivery.ParseID(e.ID); err == nil && id.Group == "" && id.Kind == "Namespace" {
			namespaces.Entries = append(namespaces.Entries, e)
			continue
		}
		rest.Entries = append(rest.Entries, e)
	}
	return rest, namespaces
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
	c, err := r.Children.Client(ctx, cdKey)
	if err != nil {
		return fmt.Errorf("reaching cluster %s to delete the workspace's namespace: %w", cdKey, err)
	}
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: childNamespace(obj.Name)}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("reading namespace %s on %s: %w", childNamespace(obj.Name), cdKey, err)
	}
	if ns.Labels[plan.WorkspaceLabel] != obj.Name || ns.Labels[plan.WorkspaceOwnerNamespaceLabel] != naming.LabelValue(obj.Namespace) {
		return nil
	}
	if err := c.Delete(ctx, ns); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting namespace %s on %s: %w", ns.Name, cdKey, err)
	}
	return nil
}

// releaseQuotas removes a deleted workspace's charges from every quota
// that holds one.
func (r *Reconciler) releaseQuotas(ctx context.Context, obj *workspacesv1.WorkspaceDeployment) error {
	if r.Ledger == nil {
		return nil
	}
	list := &quotav1alpha1.TenantQuotaList{}
	if err := r.List(ctx, list); err != nil {
		return fmt.Errorf("listing TenantQuotas: %w", err)
	}
	var names []string
	for i := range list.Items {
		if quota.Find(list.Items[i].Status.Charges, obj.UID) != nil {
			names = append(names, list.Items[i].Name)
		}
	}
	if err := r.Ledger.Release(ctx, names, obj.UID); err != nil {
		return fmt.Errorf("releasing the workspace's quota charges: %w", err)
	}
	return nil
}
