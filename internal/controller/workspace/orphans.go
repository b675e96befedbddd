package workspace

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/childcluster"
	"github.com/apiaryhq/apiary/internal/controller/workspace/childns"
	"github.com/apiaryhq/apiary/internal/delivery"
	"github.com/apiaryhq/apiary/internal/naming"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
)

// fluxNameLabel marks what Flux applied: in Git mode the sink's sweep
// removes a gone workspace's files and Flux prunes them.
const fluxNameLabel = "kustomize.toolkit.fluxcd.io/name"

// OrphanSweeper sweeps what a workspace delivered when the workspace is gone
// without its cleanup: someone removed its finalizer (before the chart's
// ValidatingAdmissionPolicy, or an administrator), so reconcileDelete never
// ran. Its ServiceSet, found by Apiary's owner and workspace labels, would
// keep the release and its GPUs; with a cross-namespace reference no
// ownerReference lets Kubernetes collect it. The sweep unpauses and deletes
// the ServiceSet (k0rdent uninstalls the release), deletes its values
// Secret and the workspace's namespace on the child when they carry the
// workspace's marks, with an event on the ServiceSet. It runs for every
// ServiceSet the manager sees (so at start for all of them) and when a
// workspace goes.
//
// It is a controller of its own, registered from the one list
// (internal/controller/setup.go), and shares nothing with the workspace
// reconciler but the client.
type OrphanSweeper struct {
	client.Client
	// APIReader confirms past the cache that a workspace is gone.
	APIReader     client.Reader
	EventRecorder events.EventRecorder
	// Children reaches the child clusters, for the workspace's namespace
	// there; nil leaves child namespaces alone.
	Children *childcluster.Manager
}

// SetupWithManager registers the sweep.
func (o *OrphanSweeper) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("workspace-orphans").
		For(&k0rdentv1beta1.ServiceSet{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(obj client.Object) bool {
			_, _, ok := orphanOwner(obj)
			return ok
		}))).
		Watches(&workspacesv1.WorkspaceDeployment{}, handler.Funcs{
			DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				add(q, o.serviceSetsOf(ctx, e.Object))
			},
		}).
		Complete(o)
}

// orphanOwner names the workspace a ServiceSet was delivered for: it
// carries the sink's owner labels of a WorkspaceDeployment and Apiary's
// workspace labels, and Flux did not apply it.
func orphanOwner(obj client.Object) (namespace, name string, ok bool) {
	l := obj.GetLabels()
	if l[delivery.LabelOwnerKind] != "WorkspaceDeployment" || l[plan.RoleLabel] == plan.RolePrerequisite || l[fluxNameLabel] != "" {
		return "", "", false
	}
	name, namespace = l[plan.WorkspaceLabel], l[plan.WorkspaceOwnerNamespaceLabel]
	owner := delivery.Owner{Kind: "WorkspaceDeployment", Namespace: namespace, Name: name}
	return namespace, name, name != "" && namespace != "" && owner.Owns(l)
}

// serviceSetsOf maps a workspace that went to the ServiceSets labelled as its.
func (o *OrphanSweeper) serviceSetsOf(ctx context.Context, w client.Object) []reconcile.Request {
	list := &k0rdentv1beta1.ServiceSetList{}
	sel := client.MatchingLabels{plan.WorkspaceLabel: w.GetName(), plan.WorkspaceOwnerNamespaceLabel: naming.LabelValue(w.GetNamespace())}
	if err := o.List(ctx, list, sel); err != nil {
		log.FromContext(ctx).Error(err, "listing the ServiceSets of a workspace that went")
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return out
}

// Reconcile sweeps one ServiceSet when its workspace is gone, in the cache
// and on the API server.
func (o *OrphanSweeper) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	r := o
	ss := &k0rdentv1beta1.ServiceSet{}
	if err := r.Get(ctx, req.NamespacedName, ss); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	ns, name, ok := orphanOwner(ss)
	if !ok {
		return ctrl.Result{}, nil
	}
	key := types.NamespacedName{Namespace: ns, Name: name}
	if gone, err := o.gone(ctx, key); err != nil || !gone {
		return ctrl.Result{}, err
	}
	log.FromContext(ctx).Info("removing the ServiceSet of a workspace that is gone without its cleanup", "workspace", key.String())
	if r.EventRecorder != nil {
		r.EventRecorder.Eventf(ss, nil, corev1.EventTypeWarning, workspacesv1.OrphanSweptReason, "Sweep",
			"workspace %s is gone without its cleanup (its finalizer was removed): removing its ServiceSet, values and namespace on the child", key)
	}
	stub := &workspacesv1.WorkspaceDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if _, paused := ss.Annotations[k0rdentv1beta1.ServiceSetPausedAnnotation]; paused {
		patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:null}}}`, k0rdentv1beta1.ServiceSetPausedAnnotation))
		if err := r.Patch(ctx, ss, client.RawPatch(types.MergePatchType, patch)); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("unpausing orphaned ServiceSet %s: %w", req.NamespacedName, err)
		}
	}
	if err := r.Delete(ctx, ss, client.Preconditions{UID: &ss.UID}); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, fmt.Errorf("deleting orphaned ServiceSet %s: %w", req.NamespacedName, err)
	}
	secret := &corev1.Secret{}
	skey := client.ObjectKey{Namespace: ss.Namespace, Name: plan.ValuesSecretName(ss.Spec.Cluster, name)}
	if err := r.APIReader.Get(ctx, skey, secret); err == nil && orphanOwnedBy(secret, stub) {
		if err := r.Delete(ctx, secret, client.Preconditions{UID: &secret.UID}); client.IgnoreNotFound(err) != nil {
			return ctrl.Result{}, fmt.Errorf("deleting orphaned values Secret %s: %w", skey, err)
		}
	}
	if r.Children == nil {
		return ctrl.Result{}, nil
	}
	// The namespace goes only when it names the workspace's namespace too.
	cdKey := types.NamespacedName{Namespace: ss.Namespace, Name: ss.Spec.Cluster}
	cd := &k0rdentv1beta1.ClusterDeployment{}
	if err := r.Get(ctx, cdKey, cd); err != nil || !cd.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if err := (&childns.Namespaces{Children: r.Children}).Delete(ctx, stub, cdKey); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}

// gone reports whether the workspace is absent from the cache and, read
// again past it, from the API server.
func (o *OrphanSweeper) gone(ctx context.Context, key types.NamespacedName) (bool, error) {
	w := &workspacesv1.WorkspaceDeployment{}
	err := o.Get(ctx, key, w)
	if !apierrors.IsNotFound(err) {
		return false, client.IgnoreNotFound(err)
	}
	if o.APIReader == nil {
		return false, nil
	}
	err = o.APIReader.Get(ctx, key, w)
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	return false, err
}

// orphanOwnedBy reports whether obj carries the owner labels of w.
func orphanOwnedBy(obj client.Object, w *workspacesv1.WorkspaceDeployment) bool {
	return delivery.Owner{Kind: "WorkspaceDeployment", Namespace: w.Namespace, Name: w.Name}.Owns(obj.GetLabels())
}
