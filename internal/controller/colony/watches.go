package colony

import (
	"context"
	"strings"

	"github.com/fluxcd/pkg/runtime/predicates"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	"github.com/apiaryhq/apiary/internal/childcluster"
	"github.com/apiaryhq/apiary/internal/controller/reconciler"
	"github.com/apiaryhq/apiary/internal/delivery"
	"github.com/apiaryhq/apiary/internal/shard"
)

// colonyBundleConfigMapIndex indexes Colonies by the bundle ConfigMaps they use.
const colonyBundleConfigMapIndex = ".spec.colonyClusters.bundle.configMapRef"

// SetupWithManager registers the Colony controller. It reacts to watches:
// Colony spec changes, its ClusterDeployments, kubeconfig Secrets, bundle
// ConfigMaps and the nodes of its child clusters.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts Options) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &infrav1.Colony{}, colonyBundleConfigMapIndex,
		func(o client.Object) []string {
			var out []string
			for _, c := range o.(*infrav1.Colony).Spec.ColonyClusters {
				if c.Bundle != nil && c.Bundle.ConfigMapRef != nil {
					out = append(out, c.Bundle.ConfigMapRef.Name)
				}
			}
			return out
		}); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("colony").
		For(&infrav1.Colony{}, builder.WithPredicates(r.shardPredicate(), predicate.Or(
			predicate.GenerationChangedPredicate{}, predicates.ReconcileRequestedPredicate{}, holderChanged))).
		Watches(&k0rdentv1beta1.ClusterDeployment{}, handler.EnqueueRequestsFromMapFunc(
			func(_ context.Context, o client.Object) []reconcile.Request { return colonyOwnerRequest(o) })).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.colonyForKubeconfigSecret),
			builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
				return strings.HasSuffix(o.GetName(), k0rdentv1beta1.KubeconfigSecretSuffix)
			}))).
		WatchesMetadata(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.coloniesForConfigMap)).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(opts.MaxConcurrentReconciles, 1)})
	if r.Children != nil {
		b = b.WatchesRawSource(r.Children.Source(handler.EnqueueRequestsFromMapFunc(r.colonyForCluster), childcluster.NodeKind))
	}
	if r.Shards.Enabled() {
		b = b.Watches(&coordinationv1.Lease{}, handler.EnqueueRequestsFromMapFunc(r.coloniesOfLease), builder.WithPredicates(r.Shards.LeaseEvents()))
	}
	if g := reconciler.AsGit(r.Sink); g != nil {
		b = b.WatchesRawSource(source.Channel(g.Subscribe("Colony"), &handler.EnqueueRequestForObject{})).
			Watches(reconciler.KustomizationObject(), handler.EnqueueRequestsFromMapFunc(r.unsyncedColonies))
	}
	return b.Complete(r)
}

// colonyForCluster maps a ClusterDeployment (or its child cluster) to the
// Colony that owns it.
func (r *Reconciler) colonyForCluster(ctx context.Context, o client.Object) []reconcile.Request {
	cd := &k0rdentv1beta1.ClusterDeployment{}
	if err := r.Get(ctx, client.ObjectKeyFromObject(o), cd); err != nil {
		return nil
	}
	return colonyOwnerRequest(cd)
}

func (r *Reconciler) colonyForKubeconfigSecret(ctx context.Context, o client.Object) []reconcile.Request {
	name := strings.TrimSuffix(o.GetName(), k0rdentv1beta1.KubeconfigSecretSuffix)
	cd := &k0rdentv1beta1.ClusterDeployment{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: o.GetNamespace(), Name: name}, cd); err != nil {
		return nil
	}
	return colonyOwnerRequest(cd)
}

func colonyOwnerRequest(o metav1.Object) []reconcile.Request {
	if ref := metav1.GetControllerOf(o); ref != nil && ref.Kind == "Colony" &&
		strings.HasPrefix(ref.APIVersion, infrav1.GroupVersion.Group+"/") {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: ref.Name}}}
	}
	// Objects delivered through Git carry no owner references (their UIDs
	// would not survive a rebuilt cluster); the sink's owner labels name
	// the Colony instead.
	l := o.GetLabels()
	if l[delivery.LabelOwnerKind] == "Colony" && l[delivery.LabelOwnerNamespace] == o.GetNamespace() && l[delivery.LabelOwnerName] != "" {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: o.GetNamespace(), Name: l[delivery.LabelOwnerName]}}}
	}
	return nil
}

func (r *Reconciler) coloniesForConfigMap(ctx context.Context, o client.Object) []reconcile.Request {
	list := &infrav1.ColonyList{}
	if err := r.List(ctx, list, client.InNamespace(o.GetNamespace()),
		client.MatchingFields{colonyBundleConfigMapIndex: o.GetName()}); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, c := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&c)})
	}
	return out
}

// unsyncedColonies maps a change of a Flux Kustomization to every Colony:
// their cached Synced condition may not hold a commit made a moment ago,
// so it cannot pick the ones that wait for Flux, and Colonies are few. A
// Colony that Flux has synced reads its state from the cache and writes
// nothing.
func (r *Reconciler) unsyncedColonies(ctx context.Context, _ client.Object) []reconcile.Request {
	return reconciler.RequestsForAll(ctx, r.Client, &infrav1.ColonyList{})
}

// holderChanged passes an update that changes the object's shard claim.
var holderChanged = reconciler.UpdatedWhen(func(old, updated client.Object) bool {
	return old.GetAnnotations()[shard.HolderAnnotation] != updated.GetAnnotations()[shard.HolderAnnotation]
})

// shardPredicate lets through the events of Colonies this shard may have
// work on: its own and the ones it holds. Reconciles decide again.
func (r *Reconciler) shardPredicate() predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		return r.Shards.Relevant(context.Background(), shard.Unit{Kind: shard.KindColony, NamespacedName: client.ObjectKeyFromObject(o)})
	})
}

// coloniesOfLease maps a shard's Lease to the Colonies this shard is to
// take from it: the shard may have stopped.
func (r *Reconciler) coloniesOfLease(ctx context.Context, o client.Object) []reconcile.Request {
	i, ok := shard.LeaseIndex(o.GetName())
	if !ok {
		return nil
	}
	list := &infrav1.ColonyList{}
	if err := r.List(ctx, list); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, c := range list.Items {
		if c.Annotations[shard.HolderAnnotation] == shard.FormatHolder(i) &&
			shard.Desired(client.ObjectKeyFromObject(&c).String(), r.Shards.Config.Shards) == r.Shards.Config.Index {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&c)})
		}
	}
	return out
}
