package workspace

import (
	"context"
	"maps"
	"strings"

	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/fluxcd/pkg/runtime/predicates"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/access"
	"github.com/apiaryhq/apiary/internal/childcluster"
	"github.com/apiaryhq/apiary/internal/controller/index"
	"github.com/apiaryhq/apiary/internal/controller/reconciler"
	"github.com/apiaryhq/apiary/internal/controller/workspace/childns"
	"github.com/apiaryhq/apiary/internal/controller/workspace/desired"
	"github.com/apiaryhq/apiary/internal/controller/workspace/routing"
	routesink "github.com/apiaryhq/apiary/internal/delivery/routes"
	"github.com/apiaryhq/apiary/internal/prerequisite/install"
	"github.com/apiaryhq/apiary/internal/priority"
	"github.com/apiaryhq/apiary/internal/quota"
	"github.com/apiaryhq/apiary/internal/shard"
	"github.com/apiaryhq/apiary/internal/wake"
	"github.com/apiaryhq/apiary/internal/workspace/lifecycle"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
)

// SetupWithManager registers the WorkspaceDeployment controller. It reacts
// to watches: workspaces, their classes and clusters, ServiceSets, values
// Secrets and ConfigMaps, the nodes and pods of child clusters while a
// workspace waits for GPUs, and the Gateways of regional and child clusters
// that routed workspaces read.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, opts Options) error {
	r.stores = newStores()
	r.prerequisites = &install.Installer{Reader: r.Client, EventRecorder: r.EventRecorder, Bundles: r.Bundles,
		Sink: r.Sink, Settings: r.Settings, Installs: r.Installs}
	values := r.ValuesReader
	if values == nil {
		values = r.APIReader
	}
	r.desired = &desired.Renderer{Reader: r.Client, APIReader: values, Bundles: r.Bundles, Settings: r.Settings, Scheme: r.Scheme()}
	r.namespaces = &childns.Namespaces{Children: r.Children, Mesh: r.Mesh}
	r.routing = &routing.Router{Client: r.Client, Children: r.Children, Sinks: r.RouteSinks, Bundles: r.Bundles,
		Settings: r.Settings, Gateway: r.Gateway, Mesh: r.Mesh, SyncReader: r.SyncReader, Ports: access.NewLedger(),
		Stripe: r.portStripe(), Hosts: access.NewHostLedger()}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("workspacedeployment").
		For(&workspacesv1.WorkspaceDeployment{}, builder.WithPredicates(r.shardPredicate(), predicate.Or(
			predicate.GenerationChangedPredicate{}, predicates.ReconcileRequestedPredicate{}))).
		Watches(&workspacesv1.WorkspaceClass{}, handler.EnqueueRequestsFromMapFunc(r.mine(r.workspacesOfClass))).
		Watches(&k0rdentv1beta1.ClusterDeployment{}, r.clusterEvents()).
		Watches(&workspacesv1.WorkspacePriorityClass{}, handler.EnqueueRequestsFromMapFunc(r.workspacesOfPriorityClass)).
		// A release that settles (deployed or failed) is what a user waits
		// on: it overtakes the creation work in the queue.
		Watches(&k0rdentv1beta1.ServiceSet{}, priority.MapOnUpdate(r.workspacesOfServiceSet, releaseSettled, priority.Outcome)).
		Watches(&k0rdentv1beta1.ServiceSet{}, r.forgetDeletedPrerequisites()).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.workspacesOfSecret)).
		WatchesMetadata(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.workspacesOfValues("ConfigMap"))).
		// A workspace that changes phase or goes may free GPUs, quota room,
		// pool ports and host names for those waiting.
		Watches(&workspacesv1.WorkspaceDeployment{}, handler.Funcs{
			UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				add(q, r.siblingChanged(e.ObjectOld, e.ObjectNew))
			},
			DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				add(q, r.siblingGone(e.Object))
			},
		}).
		// A regional cluster that changes may complete the routing infrastructure.
		Watches(&k0rdentv1beta1.ClusterDeployment{}, handler.EnqueueRequestsFromMapFunc(r.routedViaRegional), regionalChanged()).
		// A quota that gives room, or a namespace that changes tenant, may
		// let the workspaces waiting for a quota in.
		Watches(&quotav1alpha1.TenantQuota{}, handler.EnqueueRequestsFromMapFunc(r.quotaWaiters),
			builder.WithPredicates(predicate.Funcs{
				UpdateFunc: func(e event.UpdateEvent) bool {
					return quota.RoomGrew(e.ObjectOld.(*quotav1alpha1.TenantQuota), e.ObjectNew.(*quotav1alpha1.TenantQuota))
				},
			})).
		// A quota that appears or selects otherwise counts or releases the
		// workspaces it selects or selected; the workspaces of an earlier
		// Apiary's charges move them onto their status.
		Watches(&quotav1alpha1.TenantQuota{}, handler.Funcs{
			CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				add(q, r.quotaMembers(ctx, e.Object.(*quotav1alpha1.TenantQuota), true))
			},
			UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				o, n := e.ObjectOld.(*quotav1alpha1.TenantQuota), e.ObjectNew.(*quotav1alpha1.TenantQuota)
				if !equality.Semantic.DeepEqual(o.Spec.NamespaceSelector, n.Spec.NamespaceSelector) {
					add(q, r.quotaMembers(ctx, o, false))
					add(q, r.quotaMembers(ctx, n, false))
				}
			},
		}).
		WatchesMetadata(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.namespaceChanged),
			builder.WithPredicates(predicate.LabelChangedPredicate{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(opts.MaxConcurrentReconciles, 1)})
	if r.Children != nil {
		b = b.WatchesRawSource(r.Children.Source(handler.EnqueueRequestsFromMapFunc(r.waitingOnCluster),
			childcluster.NodeKind, childcluster.PodKind)).
			// The tenant Gateway and the waypoints, on regional and child
			// clusters, of the workspaces' routes.
			WatchesRawSource(r.Children.Source(handler.EnqueueRequestsFromMapFunc(r.routedOnCluster), childcluster.GatewayKind))
	}
	if g := reconciler.AsGit(r.Sink); g != nil {
		b = b.WatchesRawSource(source.Channel(g.Subscribe("WorkspaceDeployment"), &handler.EnqueueRequestForObject{})).
			Watches(reconciler.KustomizationObject(), handler.EnqueueRequestsFromMapFunc(r.unsyncedWorkspaces))
	}
	if g, ok := r.RouteSinks.(interface {
		Subscribe(string) <-chan event.GenericEvent
	}); ok {
		b = b.WatchesRawSource(source.Channel(g.Subscribe(routesink.OwnerKind), &handler.EnqueueRequestForObject{}))
	}
	// The activity reader's answers, which it probes off the workers.
	if n, ok := r.Activity.(interface {
		Subscribe() <-chan event.GenericEvent
	}); ok {
		b = b.WatchesRawSource(source.Channel(n.Subscribe(), &handler.EnqueueRequestForObject{}))
	}
	b = r.setupShardWatches(b)
	return b.Complete(r)
}

// unsyncedWorkspaces maps a change of a Flux Kustomization to the
// workspaces that wait for Flux to apply or prune their commit (waitSync):
// their objects, their routes, or a deletion.
func (r *Reconciler) unsyncedWorkspaces(context.Context, client.Object) []reconcile.Request {
	return r.wake(wake.Topic{Kind: waitSync})
}

func requests(list []workspacesv1.WorkspaceDeployment, keep func(*workspacesv1.WorkspaceDeployment) bool) []reconcile.Request {
	out := make([]reconcile.Request, 0, len(list))
	for i := range list {
		if keep == nil || keep(&list[i]) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list[i])})
		}
	}
	return out
}

func (r *Reconciler) listBy(ctx context.Context, field, value string) []workspacesv1.WorkspaceDeployment {
	list := &workspacesv1.WorkspaceDeploymentList{}
	if err := r.List(ctx, list, client.MatchingFields{field: value}); err != nil {
		return nil
	}
	return list.Items
}

func (r *Reconciler) workspacesOfClass(ctx context.Context, o client.Object) []reconcile.Request {
	return requests(r.listBy(ctx, index.WorkspaceClass, o.GetName()), nil)
}

// workspacesOfPriorityClass maps a WorkspacePriorityClass to the
// workspaces that wait with it or for it (waitPriorityClass).
func (r *Reconciler) workspacesOfPriorityClass(_ context.Context, o client.Object) []reconcile.Request {
	return r.wake(wake.Topic{Kind: waitPriorityClass, Key: o.GetName()})
}

func (r *Reconciler) workspacesOfCluster(ctx context.Context, o client.Object) []reconcile.Request {
	return requests(r.listBy(ctx, index.WorkspaceCluster, client.ObjectKeyFromObject(o).String()), nil)
}

// workspacesOfServiceSet maps a workspace's ServiceSet to it, by its
// workspace labels or, without them, by its ownerReferences
// (workspacesReferencedBy), and a shared prerequisite ServiceSet to the
// workspaces of its cluster that wait for it (waitPrerequisites).
func (r *Reconciler) workspacesOfServiceSet(ctx context.Context, o client.Object) []reconcile.Request {
	labels := o.GetLabels()
	ss, ok := o.(*k0rdentv1beta1.ServiceSet)
	if !ok {
		return nil
	}
	prerequisites := clusterTopic(waitPrerequisites, types.NamespacedName{Namespace: ss.Namespace, Name: ss.Spec.Cluster})
	if labels[plan.RoleLabel] == plan.RolePrerequisite {
		return r.wake(prerequisites)
	}
	name, ns := labels[plan.WorkspaceLabel], labels[plan.WorkspaceOwnerNamespaceLabel]
	if name == "" || ns == "" {
		// The exalsius operator's prerequisite ServiceSets carry no role
		// label: one that is no workspace's may be one of them.
		if out := r.workspacesReferencedBy(ctx, o); len(out) > 0 {
			return out
		}
		return r.wake(prerequisites)
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: ns, Name: name}}}
}

// workspacesReferencedBy maps a ServiceSet without Apiary's workspace labels
// to the workspaces of its cluster whose UIDs its ownerReferences name. The
// exalsius operator's ServiceSets have such a reference and none of those
// labels, and Apiary adopts them without writing them while they hold what
// it renders (delivery.DeferAdoption), so it is by the reference that their
// status changes reach their workspace. The workspace is looked up by UID,
// not by the reference's name, as the operator may have referenced a
// workspace of another namespace than the ServiceSet's.
func (r *Reconciler) workspacesReferencedBy(ctx context.Context, o client.Object) []reconcile.Request {
	ss, ok := o.(*k0rdentv1beta1.ServiceSet)
	if !ok {
		return nil
	}
	uids := map[types.UID]bool{}
	for _, ref := range ss.OwnerReferences {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err == nil && gv.Group == workspacesv1.GroupVersion.Group && ref.Kind == "WorkspaceDeployment" {
			uids[ref.UID] = true
		}
	}
	if len(uids) == 0 {
		return nil
	}
	key := client.ObjectKey{Namespace: ss.Namespace, Name: ss.Spec.Cluster}.String()
	return requests(r.listBy(ctx, index.WorkspaceCluster, key), func(w *workspacesv1.WorkspaceDeployment) bool { return uids[w.UID] })
}

// releaseSettled reports whether a ServiceSet update settles one of its
// releases: a service whose state turned Deployed, Failed or Deleted.
func releaseSettled(old, updated client.Object) bool {
	o, ok1 := old.(*k0rdentv1beta1.ServiceSet)
	n, ok2 := updated.(*k0rdentv1beta1.ServiceSet)
	if !ok1 || !ok2 {
		return false
	}
	before := make(map[string]string, len(o.Status.Services))
	for _, s := range o.Status.Services {
		before[s.Name] = s.State
	}
	for _, s := range n.Status.Services {
		settled := s.State == k0rdentv1beta1.ServiceStateDeployed || s.State == k0rdentv1beta1.ServiceStateFailed ||
			s.State == k0rdentv1beta1.ServiceStateDeleted
		if settled && before[s.Name] != s.State {
			return true
		}
	}
	return false
}

// forgetDeletedPrerequisites drops the memory of installs of a prerequisite
// ServiceSet once it is deleted, by whoever deletes it (an administrator
// moving a prerequisite, as ADR-0007 says), so that it is created again.
func (r *Reconciler) forgetDeletedPrerequisites() handler.EventHandler {
	return handler.Funcs{DeleteFunc: func(_ context.Context, e event.DeleteEvent, _ workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		if e.Object.GetLabels()[plan.RoleLabel] == plan.RolePrerequisite {
			r.Installs.Forget(e.Object.GetNamespace(), e.Object.GetName())
		}
	}}
}

func (r *Reconciler) workspacesOfValues(kind string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		list := &workspacesv1.WorkspaceDeploymentList{}
		if err := r.List(ctx, list, client.InNamespace(o.GetNamespace()),
			client.MatchingFields{index.WorkspaceValuesFrom: kind + "/" + o.GetName()}); err != nil {
			return nil
		}
		return requests(list.Items, nil)
	}
}

// siblingChanged maps a workspace's update to the topics it may end: one
// that changes phase or is being deleted may free GPUs of its cluster, one
// whose quota reservation changes moves the queues of quotas, one whose
// routes let go of a host name frees it, and one whose routes claim a host
// name wakes its other holders (hostRivals).
func (r *Reconciler) siblingChanged(old, updated client.Object) []reconcile.Request {
	o, okOld := old.(*workspacesv1.WorkspaceDeployment)
	n, okNew := updated.(*workspacesv1.WorkspaceDeployment)
	if !okOld || !okNew {
		return nil
	}
	var topics []wake.Topic
	// A waiter leaves the queues, comes back, or moves in them (a new priority).
	queueMoved := lifecycle.ClaimsPlace(o) != lifecycle.ClaimsPlace(n) || lifecycle.ClaimsPlace(n) && lifecycle.Priority(o) != lifecycle.Priority(n)
	if o.Status.Phase != n.Status.Phase || !n.DeletionTimestamp.IsZero() || o.Status.Admission != nil && n.Status.Admission == nil || queueMoved {
		topics = append(topics, clusterTopic(waitCapacity, plan.ClusterKey(n)))
	}
	if queueMoved {
		topics = append(topics, wake.Topic{Kind: waitQuota})
	}
	if o.Status.Routes != nil && len(o.Status.Routes.Ports) > 0 && (n.Status.Routes == nil || len(n.Status.Routes.Ports) == 0) {
		topics = append(topics, wake.Topic{Kind: waitPorts}) // a stopped workspace's ports
	}
	before, after := conditions.Get(o, workspacesv1.QuotaReservedCondition), conditions.Get(n, workspacesv1.QuotaReservedCondition)
	if (before == nil) != (after == nil) || before != nil && before.Status != after.Status {
		topics = append(topics, wake.Topic{Kind: waitQuota})
	}
	gained, lost := hostsChanged(o, n)
	if lost {
		topics = append(topics, wake.Topic{Kind: waitHosts})
	}
	out := append(r.wake(topics...), r.hostRivals(n, gained)...)
	if preempted(n) && !preempted(o) {
		// A preemptor wrote the stop onto its status (no new generation).
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(n)})
	}
	return out
}

// siblingGone maps a workspace's deletion to what it frees: GPUs of its
// cluster, room in quotas, ports of a regional pool, host names of a
// tenant Gateway.
func (r *Reconciler) siblingGone(o client.Object) []reconcile.Request {
	w, ok := o.(*workspacesv1.WorkspaceDeployment)
	if !ok {
		return nil
	}
	return r.wake(clusterTopic(waitCapacity, plan.ClusterKey(w)), wake.Topic{Kind: waitQuota}, wake.Topic{Kind: waitPorts},
		wake.Topic{Kind: waitHosts})
}

// quotaWaiters maps a quota's change, or a namespace's label change (which
// quotas select it), to the workspaces that wait for room in a quota.
func (r *Reconciler) quotaWaiters(context.Context, client.Object) []reconcile.Request {
	return r.wake(wake.Topic{Kind: waitQuota})
}

// waitingOnCluster maps a change of a child cluster's nodes or pods to the
// workspaces that wait for its GPUs and to its stopped workspaces.
func (r *Reconciler) waitingOnCluster(_ context.Context, o client.Object) []reconcile.Request {
	cd := client.ObjectKeyFromObject(o)
	return r.wake(clusterTopic(waitCapacity, cd), clusterTopic(waitStopped, cd))
}

// workspacesOfSecret maps a Secret to the workspaces that take values from
// it and, for a kubeconfig Secret <cd>-kubeconfig, to those that wait to
// reach that cluster.
func (r *Reconciler) workspacesOfSecret(ctx context.Context, o client.Object) []reconcile.Request {
	out := r.workspacesOfValues("Secret")(ctx, o)
	if cd, ok := strings.CutSuffix(o.GetName(), k0rdentv1beta1.KubeconfigSecretSuffix); ok && cd != "" {
		out = append(out, r.wake(clusterTopic(waitChild, types.NamespacedName{Namespace: o.GetNamespace(), Name: cd}))...)
	}
	return out
}

// add enqueues requests.
func add(q workqueue.TypedRateLimitingInterface[reconcile.Request], reqs []reconcile.Request) {
	for _, req := range reqs {
		q.Add(req)
	}
}

// routedViaRegional maps a regional ClusterDeployment that appears, goes or
// changes its labels to the workspaces whose routes it holds and to those
// of its child clusters (waitRoutes): which regional cluster a workspace's
// routes go to may change.
func (r *Reconciler) routedViaRegional(ctx context.Context, o client.Object) []reconcile.Request {
	topics := []wake.Topic{clusterTopic(waitRoutes, client.ObjectKeyFromObject(o))}
	for _, child := range r.childrenOf(ctx, o) {
		topics = append(topics, clusterTopic(waitRoutes, child))
	}
	return r.wake(topics...)
}

// regionalChanged passes the events of a ClusterDeployment that may change
// which regional cluster routes go to: created, deleted, relabelled, or
// being deleted.
func regionalChanged() builder.Predicates {
	return builder.WithPredicates(predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return !maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels()) ||
				e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	})
}

// routedOnCluster maps a change of a cluster's Gateways (or of its
// reachability) to the workspaces whose routes read them (waitRoutes): those
// routed through it as their regional cluster, and, with waypoints, those
// on it as their child cluster.
func (r *Reconciler) routedOnCluster(_ context.Context, o client.Object) []reconcile.Request {
	return r.wake(clusterTopic(waitRoutes, client.ObjectKeyFromObject(o)))
}

// childrenOf lists the child clusters of a regional ClusterDeployment, as
// KOF links them.
func (r *Reconciler) childrenOf(ctx context.Context, regional client.Object) []types.NamespacedName {
	name := regional.GetLabels()[access.ClusterNameLabel]
	if name == "" {
		return nil
	}
	children := &k0rdentv1beta1.ClusterDeploymentList{}
	if err := r.List(ctx, children, client.InNamespace(regional.GetNamespace()), client.MatchingLabels{access.RegionalClusterNameLabel: name}); err != nil {
		return nil
	}
	out := make([]types.NamespacedName, 0, len(children.Items))
	for i := range children.Items {
		out = append(out, client.ObjectKeyFromObject(&children.Items[i]))
	}
	return out
}

// workspacesOfColony maps a Colony to the workspaces of its clusters: a
// Colony that is claimed, released or lists a new cluster changes which
// shard acts on them.
func (r *Reconciler) workspacesOfColony(ctx context.Context, o client.Object) []reconcile.Request {
	c, ok := o.(*infrav1.Colony)
	if !ok {
		return nil
	}
	var out []reconcile.Request
	for _, name := range shard.ClusterNames(c) {
		out = append(out, requests(r.listBy(ctx, index.WorkspaceCluster, client.ObjectKey{Namespace: c.Namespace, Name: name}.String()), nil)...)
	}
	return out
}

// shardWaiters maps a shard's Lease to the workspaces that wait for a shard
// to hand their cluster over (waitShard): its holder may have stopped.
func (r *Reconciler) shardWaiters(context.Context, client.Object) []reconcile.Request {
	return r.wake(wake.Topic{Kind: waitShard})
}

// setupShardWatches adds the watches sharding needs: Colonies (claims,
// releases, new clusters) and the shards' Leases.
func (r *Reconciler) setupShardWatches(b *ctrl.Builder) *ctrl.Builder {
	if !r.Shards.Enabled() {
		return b
	}
	return b.
		Watches(&infrav1.Colony{}, handler.EnqueueRequestsFromMapFunc(r.mine(r.workspacesOfColony)),
			holderOrSpecChanged()).
		Watches(&coordinationv1.Lease{}, handler.EnqueueRequestsFromMapFunc(r.shardWaiters), builder.WithPredicates(r.Shards.LeaseEvents()))
}

// holderOrSpecChanged passes a holder object's creation, deletion, spec
// change or change of shard claim.
func holderOrSpecChanged() builder.Predicates {
	return builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetAnnotations()[shard.HolderAnnotation] != e.ObjectNew.GetAnnotations()[shard.HolderAnnotation]
		},
	}))
}
