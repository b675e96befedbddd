package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/access"
	"github.com/apiaryhq/apiary/internal/admission"
	"github.com/apiaryhq/apiary/internal/childcluster"
	"github.com/apiaryhq/apiary/internal/delivery"
	"github.com/apiaryhq/apiary/internal/mesh"
	"github.com/apiaryhq/apiary/internal/metrics"
	"github.com/apiaryhq/apiary/internal/ownwrites"
	"github.com/apiaryhq/apiary/internal/prerequisite"
	"github.com/apiaryhq/apiary/internal/quota"
	"github.com/apiaryhq/apiary/internal/render"
	"github.com/apiaryhq/apiary/internal/shard"
	"github.com/apiaryhq/apiary/internal/wake"
	"github.com/apiaryhq/apiary/internal/workspace/status"
)

// +kubebuilder:rbac:groups=workspaces.exalsius.ai,resources=workspacedeployments,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=workspaces.exalsius.ai,resources=workspacedeployments/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=workspaces.exalsius.ai,resources=workspacedeployments/finalizers,verbs=update
// +kubebuilder:rbac:groups=workspaces.exalsius.ai,resources=workspaceclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=k0rdent.mirantis.com,resources=servicesets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=k0rdent.mirantis.com,resources=clusterdeployments,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=get;list;watch

// WorkspaceDeploymentReconciler deploys one workspace of a class on one
// ClusterDeployment: it merges the class's defaults with the workspace's
// overrides, installs shared prerequisites, waits for GPU capacity, and
// delivers one k0rdent ServiceSet whose readiness it reads back.
type WorkspaceDeploymentReconciler struct {
	client.Client
	// APIReader reads what the manager does not cache: values Secrets and
	// ConfigMaps, and events for failure forensics.
	APIReader     client.Reader
	EventRecorder events.EventRecorder
	Bundles       *render.Registry
	Sink          delivery.Sink
	// SyncReader reads Flux Kustomizations (the manager's cache) in Git mode.
	SyncReader client.Reader
	Children   *childcluster.Manager
	// NoCrossNamespaceRefs refuses ClusterDeployments outside the workspace's namespace.
	NoCrossNamespaceRefs bool
	// Settings are passed to bundles as .Input.operator.
	Settings map[string]any
	// Gateway is the tenant Gateway on regional clusters that access routes
	// attach to; istio-system/istio-ingressgateway when unset.
	Gateway types.NamespacedName
	// RouteSinks deliver access routes to regional clusters; direct
	// server-side apply through Children when nil.
	RouteSinks RouteSinks
	// Mesh says how workspace namespaces join the tenant's Istio mesh, and
	// whether routes need the per-child waypoints; ambient without
	// waypoints when zero.
	Mesh mesh.Config
	// Ledger charges workspaces to TenantQuotas; quotas are not enforced when nil.
	Ledger *quota.Ledger
	// Policy orders the workspaces that wait for GPUs; StrictFIFO when empty.
	Policy admission.Policy
	// PrerequisiteGracePeriod is how long a shared prerequisite install that
	// no workspace of its cluster needs any more is kept before it is
	// removed; zero keeps it forever (the exalsius operator's behaviour).
	PrerequisiteGracePeriod time.Duration
	// Shards decides which shard acts on a workspace's cluster; every
	// workspace is this process's when nil.
	Shards *shard.Gate
	// ClusterWide runs the controllers beside it that are not per cluster
	// (the Git regional routes controller): with sharding, on shard 0 only.
	ClusterWide bool

	gate     *gpuGate
	installs *prerequisite.Writes
	rendered renderCache
	ports    *access.Ledger
	sweeper  *routeSweeper
	// waits holds what each workspace waits for (workspace_waits.go).
	waits *wake.Waits
	// written holds the workspaces as this manager last wrote them, until
	// the cache has those writes.
	written *ownwrites.Memory[*workspacesv1.WorkspaceDeployment]
	// enrolled remembers the labels last given to each workspace's child
	// namespace (by UID), so that a namespace is read again only when they
	// change: at start, and when the mesh configuration changed.
	enrolled sync.Map
}

// WorkspaceDeploymentReconcilerOptions configure the WorkspaceDeployment controller.
type WorkspaceDeploymentReconcilerOptions struct {
	MaxConcurrentReconciles int
}

// Reconcile is the entry point of a WorkspaceDeployment's reconciliation.
func (r *WorkspaceDeploymentReconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	// The token comes before any read: what the reconcile waits for is
	// registered when it ends, and a change of it in between runs it again.
	w := &workspaceRun{}
	tok := r.waits.Begin()
	defer func() {
		if r.waits.Settle(tok, req.NamespacedName, w.waits...) && retErr == nil {
			result.RequeueAfter = sooner(result.RequeueAfter, missedWakeRetry)
		}
	}()
	obj := &workspacesv1.WorkspaceDeployment{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, ignoreGone(metrics.KindWorkspaceDeployment, req, err)
	}
	defer metrics.ObserveReconcile(metrics.KindWorkspaceDeployment, req.NamespacedName, time.Now())
	// A reconcile started by another event right after this manager's last
	// write reads that write, not the cache's older copy.
	obj = r.written.Latest(obj)
	ticket, err := r.enterShard(ctx, obj)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !ticket.Acting() {
		if ticket.Action == shard.Wait {
			w.waitFor(wake.Topic{Kind: waitShard})
		}
		return r.notActing(ctx, obj, ticket)
	}
	defer ticket.Done()
	readVersion := obj.ResourceVersion
	sp := newObjectPatcher(r.Client, obj)
	oldPhase := obj.Status.Phase
	neverDone := obj.Status.ObservedGeneration == 0 // never Ready, never Stalled
	// The shard acts: a wait it reported is over.
	conditions.Delete(obj, workspacesv1.ShardAssignedCondition)
	defer func() {
		summarizeWorkspace(obj, retErr)
		patchErr := patchStatus(ctx, sp, obj, false)
		if patchErr != nil {
			retErr = kerrors.NewAggregate([]error{retErr, patchErr})
		}
		if patchErr == nil && obj.ResourceVersion != readVersion && obj.DeletionTimestamp.IsZero() {
			r.written.Remember(obj.DeepCopy())
		}
		if patchErr == nil && neverDone && oldPhase != workspacesv1.PhaseRunning && obj.Status.Phase == workspacesv1.PhaseRunning {
			metrics.ObserveTimeToRunning(req.NamespacedName, obj.UID, obj.CreationTimestamp.Time)
		}
		r.notify(obj, oldPhase)
		if retErr != nil {
			result = ctrl.Result{}
		}
	}()

	// Deletion comes before suspension: a suspended workspace can be deleted.
	w.obj = obj
	if !obj.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, w)
	}
	if err := ensureFinalizer(ctx, sp, obj, workspacesv1.WorkspaceDeploymentFinalizer); err != nil {
		return ctrl.Result{}, err
	}
	if obj.Spec.Suspend {
		log.FromContext(ctx).V(1).Info("reconciliation is suspended")
		return ctrl.Result{}, nil
	}
	if obj.Status.Phase == "" {
		obj.Status.Phase = workspacesv1.PhasePending
	}
	if v, ok := meta.ReconcileAnnotationValue(obj.GetAnnotations()); ok {
		obj.Status.LastHandledReconcileAt = v
	}
	return r.reconcile(ctx, w, sp)
}

// reconcile runs the workspace's steps in order; each either lets the next
// run or ends the reconciliation with a phase that says why.
func (r *WorkspaceDeploymentReconciler) reconcile(ctx context.Context, w *workspaceRun, sp *objectPatcher) (ctrl.Result, error) {
	obj := w.obj
	w.persist = func(ctx context.Context) error {
		summarizeWorkspace(obj, nil)
		return patchStatus(ctx, sp, obj, false)
	}
	steps := []func(context.Context, *workspaceRun) (stepResult, error){
		r.resolveClass,
		r.resolveCluster,
		r.resolveResources,
		r.reconcilePrerequisites,
		r.admit,
		r.deploy,
		r.observeRelease,
		r.routeAccess,
	}
	for _, step := range steps {
		res, err := step(ctx, w)
		if err != nil || res.stop {
			return ctrl.Result{RequeueAfter: sooner(res.requeueAfter, w.retry)}, err
		}
	}
	return ctrl.Result{RequeueAfter: w.retry}, nil
}

// sooner is the earlier of two requeue delays, zero meaning none.
func sooner(a, b time.Duration) time.Duration {
	if a == 0 || (b != 0 && b < a) {
		return b
	}
	return a
}

// missedWakeRetry is how soon a reconcile runs again when something it
// waits for changed while it ran.
const missedWakeRetry = 10 * time.Millisecond

// workspaceRun carries what the steps of one reconciliation found.
type workspaceRun struct {
	obj      *workspacesv1.WorkspaceDeployment
	class    *workspacesv1.WorkspaceClass
	cdKey    types.NamespacedName
	cd       *k0rdentv1beta1.ClusterDeployment
	resolved workspacesv1.WorkspaceResourceSpec
	selector map[string]string
	demand   int64
	// persist writes the status now, ahead of the reconciliation's end.
	persist func(context.Context) error
	// retry asks for another reconciliation after it, for work a step
	// could not finish without holding the others up.
	retry time.Duration
	// waits are what the workspace waits for when the reconciliation ends
	// (workspace_waits.go).
	waits []wake.Topic
}

// stepResult ends the reconciliation when stop is set.
type stepResult struct {
	stop         bool
	requeueAfter time.Duration
}

var proceed = stepResult{}

func stopWith(requeueAfter time.Duration) stepResult {
	return stepResult{stop: true, requeueAfter: requeueAfter}
}

// reconcileDelete removes the workspace in order: its routes on the
// regional cluster (awaited, so its pool ports are free), its ServiceSet
// (awaited, so the release is uninstalled), then its namespace on the
// child, then the finalizer. Prerequisites stay: other workspaces may use
// them (with --prerequisite-grace-period, the prerequisite controller
// removes those left unused).
func (r *WorkspaceDeploymentReconciler) reconcileDelete(ctx context.Context, w *workspaceRun) (ctrl.Result, error) {
	obj := w.obj
	if !controllerutil.ContainsFinalizer(obj, workspacesv1.WorkspaceDeploymentFinalizer) {
		return ctrl.Result{}, nil
	}
	obj.Status.Phase = workspacesv1.PhaseDeleting
	var regional types.NamespacedName
	if obj.Status.Routes != nil {
		obj.Status.Message = "deleting the workspace's routes on the regional cluster"
		regional, _ = parseObjectKey(obj.Status.Routes.Cluster)
	}
	done, err := r.dropRoutes(ctx, obj)
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("deleting the workspace's routes: %w", err)
	}
	if !done {
		return r.awaitRemoval(w), nil
	}
	if regional.Name != "" {
		r.sweeper.trigger(regional)
	}
	obj.Status.Message = "deleting the workspace's ServiceSet"
	var inv *commonv1.ResourceInventory
	if obj.Status.Delivery != nil {
		inv = obj.Status.Delivery.Inventory
	}
	if asGit(r.Sink) == nil {
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
	cdKey := clusterKey(obj)
	r.gate.forget(cdKey, obj.UID)
	r.rendered.forget(client.ObjectKeyFromObject(obj))
	r.enrolled.Delete(obj.UID)
	r.written.Forget(obj.UID)
	r.waits.Forget(client.ObjectKeyFromObject(obj))
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
func (r *WorkspaceDeploymentReconciler) awaitRemoval(w *workspaceRun) ctrl.Result {
	w.waitFor(wake.Topic{Kind: waitSync})
	return ctrl.Result{RequeueAfter: 5 * time.Second}
}

// notify records an event when the workspace's phase changed.
func (r *WorkspaceDeploymentReconciler) notify(obj *workspacesv1.WorkspaceDeployment, oldPhase workspacesv1.WorkspacePhase) {
	if r.EventRecorder == nil || obj.Status.Phase == oldPhase || quietPhase(obj.Status.Phase) {
		return
	}
	eventType := corev1.EventTypeNormal
	reason := string(obj.Status.Phase)
	if obj.Status.Phase == workspacesv1.PhaseFailed {
		eventType = corev1.EventTypeWarning
		if obj.Status.FailureContext != nil && obj.Status.FailureContext.Reason != "" {
			reason = obj.Status.FailureContext.Reason
		}
	}
	if obj.Status.Phase == workspacesv1.PhaseWaiting {
		reason = status.WaitingReason(obj)
	}
	r.EventRecorder.Eventf(obj, nil, eventType, reason, "Reconcile", "%s", truncate(obj.Status.Message, 1000))
}

// quietPhase reports the phases a workspace passes through on its way to
// Running, which status shows and no event repeats: events are for
// outcomes (Running, Failed), for what holds a workspace up (Waiting) and
// for deletion, as the exalsius operator emits them only for failures and
// waits. One event per workspace on the happy path keeps its requests low.
func quietPhase(p workspacesv1.WorkspacePhase) bool {
	return p == workspacesv1.PhasePending || p == workspacesv1.PhaseDeploying
}

// workspaceOwner identifies a workspace to the delivery sink. It consents
// to deferred adoption: the ServiceSet the exalsius operator wrote for it
// is not written while it holds what Apiary renders, apart from the labels
// Apiary's ServiceSets carry only to be found by, which the operator does
// not set, and the flags of its ownerReference to the workspace (the
// operator's is no controller reference, and k0rdent runs its ServiceSets
// so): Apiary reads no ServiceSet's controller, and the workspace's
// finalizer, which Apiary releases only once the ServiceSet is gone, does
// what blockOwnerDeletion would.
func workspaceOwner(obj *workspacesv1.WorkspaceDeployment) delivery.Owner {
	return delivery.Owner{Kind: "WorkspaceDeployment", Namespace: obj.Namespace, Name: obj.Name, UID: obj.UID,
		DeferAdoption: &delivery.DeferAdoption{MarkLabels: []string{WorkspaceLabel, WorkspaceOwnerNamespaceLabel, managedByLabel}}}
}

func workspaceWatchOwner(obj *workspacesv1.WorkspaceDeployment) string {
	return "workspace/" + obj.Namespace + "/" + obj.Name
}

// routesWatchOwner owns the Gateway watches of a workspace's routes, on its
// regional cluster and, with waypoints, on its child.
func routesWatchOwner(obj *workspacesv1.WorkspaceDeployment) string {
	return "routes/" + obj.Namespace + "/" + obj.Name
}

// clusterKey is the ClusterDeployment a workspace targets; the namespace
// defaults to the workspace's.
func clusterKey(obj *workspacesv1.WorkspaceDeployment) types.NamespacedName {
	ns := obj.Spec.ClusterDeploymentRef.Namespace
	if ns == "" {
		ns = obj.Namespace
	}
	return types.NamespacedName{Namespace: ns, Name: obj.Spec.ClusterDeploymentRef.Name}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
