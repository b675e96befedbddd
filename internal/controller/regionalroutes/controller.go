package regionalroutes

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/index"
	"github.com/apiaryhq/apiary/internal/delivery"
	routesink "github.com/apiaryhq/apiary/internal/delivery/routes"
	"github.com/apiaryhq/apiary/internal/naming"
)

// shardedRecheck is how often, with shards, a regional cluster being
// deleted counts again the workspaces routed there: the other shards'
// workspaces are not in this shard's cache, so their watch cannot wake it.
const shardedRecheck = 30 * time.Second

// regionalRetireSafety is the requeue while a regional cluster's
// Kustomization removal waits for its commit; Main's notice comes first.
const regionalRetireSafety = time.Minute

// Reconciler removes from Git what a regional cluster leaves
// there once its ClusterDeployment is deleted (routesink.Git.Retire): its
// routes folder and the file of its Flux Kustomization. A ClusterDeployment
// that is gone is retired at once; one being deleted once no workspace's
// routes are delivered there any more. It reacts to the deletion of
// ClusterDeployments, to workspaces whose routes leave a regional cluster,
// to the notices of Main, and to the regional clusters the start-up sweep
// finds in Git without a ClusterDeployment; at steady state it does
// nothing.
type Reconciler struct {
	client.Client
	Sinks *routesink.Git
	// APIReader lists workspaces past the cache when Sharded.
	APIReader client.Reader
	// Sharded says the cache holds only this shard's buckets' workspaces:
	// the workspaces routed to a regional cluster are then counted on the
	// API server.
	Sharded bool
}

// SetupWithManager registers the controller. It lists workspaces by the
// index of their regional cluster (internal/controller/index).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("regionalroutes").
		For(&k0rdentv1beta1.ClusterDeployment{}, builder.WithPredicates(predicate.Funcs{
			CreateFunc:  func(e event.CreateEvent) bool { return !e.Object.GetDeletionTimestamp().IsZero() },
			UpdateFunc:  func(e event.UpdateEvent) bool { return !e.ObjectNew.GetDeletionTimestamp().IsZero() },
			DeleteFunc:  func(event.DeleteEvent) bool { return true },
			GenericFunc: func(event.GenericEvent) bool { return false },
		})).
		Watches(&workspacesv1.WorkspaceDeployment{}, routesLeft{}).
		WatchesRawSource(source.Channel(r.Sinks.Main.Subscribe(routesink.RegionalOwnerKind), &handler.EnqueueRequestForObject{})).
		WatchesRawSource(source.Channel(r.Sinks.Gone(), &handler.EnqueueRequestForObject{})).
		Complete(r)
}

// Reconcile retires a regional cluster that is gone or going.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	logger := ctrl.LoggerFrom(ctx)
	key := req.NamespacedName
	cd := &k0rdentv1beta1.ClusterDeployment{}
	err := r.Get(ctx, key, cd)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return ctrl.Result{}, err
	case cd.DeletionTimestamp.IsZero():
		return ctrl.Result{}, nil
	default:
		if n := r.routedThere(ctx, key); n > 0 {
			logger.V(1).Info("the regional cluster is being deleted; waiting for its workspaces' routes to leave", "workspaces", n)
			if r.Sharded {
				return ctrl.Result{RequeueAfter: shardedRecheck}, nil
			}
			return ctrl.Result{}, nil // the workspace watch wakes it
		}
	}
	if !r.Sinks.Holds(key) {
		return ctrl.Result{}, nil
	}
	done, err := r.Sinks.Retire(ctx, key)
	if err != nil {
		logger.Error(err, "removing the Git folder and Flux Kustomization of a regional cluster that is gone; retrying")
		return ctrl.Result{}, err
	}
	if !done {
		return ctrl.Result{RequeueAfter: regionalRetireSafety}, nil
	}
	logger.Info("removed the Git folder and the Flux Kustomization of a regional cluster that is gone",
		"folder", r.Sinks.Folder(key), "kustomization", r.Sinks.Kustomization(key).String())
	return ctrl.Result{}, nil
}

// routedThere counts the workspaces whose routes are delivered through Git
// to a regional cluster.
func (r *Reconciler) routedThere(ctx context.Context, key types.NamespacedName) int {
	if r.Sharded && r.APIReader != nil {
		return r.routedThereLive(ctx, key)
	}
	list := &workspacesv1.WorkspaceDeploymentList{}
	if err := r.List(ctx, list, client.MatchingFields{index.WorkspaceRegional: key.String()}); err != nil {
		return 1 // cannot tell: wait
	}
	n := 0
	for i := range list.Items {
		if routesDelivered(&list.Items[i], key.String()) {
			n++
		}
	}
	return n
}

// routedThereLive counts them on the API server, page by page (a shard's
// cache holds only its own buckets' workspaces); only while a regional
// cluster is being deleted.
func (r *Reconciler) routedThereLive(ctx context.Context, key types.NamespacedName) int {
	n := 0
	list := &workspacesv1.WorkspaceDeploymentList{}
	for cont := ""; ; {
		if err := r.APIReader.List(ctx, list, client.Limit(500), client.Continue(cont)); err != nil {
			return max(n, 1) // cannot tell: wait
		}
		for i := range list.Items {
			if routesDelivered(&list.Items[i], key.String()) {
				n++
			}
		}
		if cont = list.Continue; cont == "" {
			return n
		}
	}
}

// routesDelivered reports whether a workspace's routes are delivered to a
// regional cluster.
func routesDelivered(w *workspacesv1.WorkspaceDeployment, regional string) bool {
	rs := w.Status.Routes
	return rs != nil && rs.Cluster == regional && rs.Delivery != nil && rs.Delivery.Mode == delivery.ModeGit &&
		rs.Delivery.Inventory != nil && len(rs.Delivery.Inventory.Entries) > 0
}

// routesLeft enqueues the regional cluster a workspace's routes left: a
// workspace deleted, or whose status no longer delivers routes there.
type routesLeft struct{}

func (routesLeft) Create(context.Context, event.TypedCreateEvent[client.Object], workqueue.TypedRateLimitingInterface[reconcile.Request]) {
}

func (routesLeft) Generic(context.Context, event.TypedGenericEvent[client.Object], workqueue.TypedRateLimitingInterface[reconcile.Request]) {
}

func (routesLeft) Update(_ context.Context, e event.TypedUpdateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	old, ok1 := e.ObjectOld.(*workspacesv1.WorkspaceDeployment)
	cur, ok2 := e.ObjectNew.(*workspacesv1.WorkspaceDeployment)
	if !ok1 || !ok2 || old.Status.Routes == nil {
		return
	}
	regional := old.Status.Routes.Cluster
	if routesDelivered(old, regional) && !routesDelivered(cur, regional) {
		enqueueRegional(q, regional)
	}
}

func (routesLeft) Delete(_ context.Context, e event.TypedDeleteEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if w, ok := e.Object.(*workspacesv1.WorkspaceDeployment); ok && w.Status.Routes != nil {
		enqueueRegional(q, w.Status.Routes.Cluster)
	}
}

func enqueueRegional(q workqueue.TypedRateLimitingInterface[reconcile.Request], regional string) {
	if key, ok := naming.ParseKey(regional); ok {
		q.Add(reconcile.Request{NamespacedName: key})
	}
}
