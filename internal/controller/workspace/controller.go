package workspace

import (
	"context"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/admission"
	"github.com/apiaryhq/apiary/internal/childcluster"
	"github.com/apiaryhq/apiary/internal/controller/reconciler"
	"github.com/apiaryhq/apiary/internal/delivery"
	routesink "github.com/apiaryhq/apiary/internal/delivery/routes"
	"github.com/apiaryhq/apiary/internal/mesh"
	"github.com/apiaryhq/apiary/internal/metrics"
	"github.com/apiaryhq/apiary/internal/prerequisite"
	"github.com/apiaryhq/apiary/internal/quota"
	"github.com/apiaryhq/apiary/internal/render"
	"github.com/apiaryhq/apiary/internal/shard"
	"github.com/apiaryhq/apiary/internal/wake"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
	"github.com/apiaryhq/apiary/internal/workspace/status"
)

// +kubebuilder:rbac:groups=workspaces.exalsius.ai,resources=workspacedeployments,verbs=get;list;watch;update;patch;delete
// +kubebuilder:rbac:groups=workspaces.exalsius.ai,resources=workspacedeployments/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=workspaces.exalsius.ai,resources=workspacedeployments/finalizers,verbs=update
// +kubebuilder:rbac:groups=workspaces.exalsius.ai,resources=workspaceclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=workspaces.exalsius.ai,resources=workspacepriorityclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=k0rdent.mirantis.com,resources=servicesets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=k0rdent.mirantis.com,resources=clusterdeployments,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=get;list;watch

// Reconciler deploys one workspace of a class on one
// ClusterDeployment: it merges the class's defaults with the workspace's
// overrides, installs shared prerequisites, waits for GPU capacity, and
// delivers one k0rdent ServiceSet whose readiness it reads back.
type Reconciler struct {
	client.Client
	// APIReader reads what the manager does not cache: values Secrets and
	// ConfigMaps, and events for failure forensics.
	APIReader client.Reader
	// ValuesReader reads valuesFrom Secrets and ConfigMaps; APIReader when
	// nil (see --values-from-service-account).
	ValuesReader  client.Reader
	EventRecorder events.EventRecorder
	// Bundles resolves bundles: by name, or from a ConfigMap.
	Bundles *render.Resolver
	Sink    delivery.Sink
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
	RouteSinks routesink.Sinks
	// Mesh says how workspace namespaces join the tenant's Istio mesh, and
	// whether routes need the per-child waypoints; ambient without
	// waypoints when zero.
	Mesh mesh.Config
	// Ledger charges workspaces to TenantQuotas; quotas are not enforced when nil.
	Ledger *quota.Ledger
	// Policy orders the workspaces that wait for GPUs; StrictFIFO when empty.
	Policy admission.Policy
	// PreemptionRequeue is where a preempted workspace queues again
	// (Kueue's requeuingStrategy.timestamp); Eviction when empty.
	PreemptionRequeue workspacesv1.RequeueTimestamp
	// Shards decides which shard acts on a workspace's cluster; every
	// workspace is this process's when nil.
	Shards *shard.Gate
	// Installs serialises the deliveries of shared prerequisite installs
	// and remembers them until the cache has them; the prerequisite
	// controller shares it.
	Installs *prerequisite.Writes
	// Sweeper removes the routes of deleted workspaces from regional
	// clusters; a deletion asks it to look at its regional cluster.
	Sweeper *routesink.Sweeper
	// Clock is the clock of every decision: expiry, idle culling, the
	// start queue, admission times and quota charge times (the Ledger's,
	// which setup gives the same clock). The wall clock when nil.
	Clock clock.PassiveClock
	// Activity reads workspaces' last activity for classes with an idle
	// policy; idle culling is off when nil.
	Activity ActivityReader

	stores
}

// Options configure the WorkspaceDeployment controller.
type Options struct {
	MaxConcurrentReconciles int
}

// Reconcile is the entry point of a WorkspaceDeployment's reconciliation.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
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
		if apierrors.IsNotFound(err) && r.Shards.Enabled() {
			if err := r.reclaim(ctx, req.NamespacedName); err != nil {
				return ctrl.Result{}, err
			}
		}
		return ctrl.Result{}, reconciler.IgnoreGone(metrics.KindWorkspaceDeployment, req, err)
	}
	r.forgetLeft(req.NamespacedName)
	defer metrics.ObserveReconcile(metrics.KindWorkspaceDeployment, req.NamespacedName, time.Now())
	// A reconcile started by another event right after this manager's last
	// write reads that write, not the cache's older copy.
	obj = r.written.Latest(obj)
	ticket, err := r.enterShard(ctx, obj)
	if err != nil {
		return ctrl.Result{}, err
	}
	if r.Shards.Enabled() && !shard.HasBucket(obj.Labels) {
		// A summary from the informer of workspaces without a bucket: label
		// it (with its finalizer), never act on it.
		ticket.Done()
		return r.labelUnbucketed(ctx, obj, ticket)
	}
	if !ticket.Acting() {
		if ticket.Action == shard.Wait {
			w.waitFor(wake.Topic{Kind: waitShard})
		}
		return r.notActing(ctx, obj, ticket)
	}
	defer ticket.Done()
	ctx = ticket.WithUnit(ctx) // the Git sinks record the unit of what they commit
	readVersion := obj.ResourceVersion
	sp := reconciler.NewPatcher(r.Client, obj)
	// The bucket label goes with the finalizer's write, or with the
	// reconcile's last one when the finalizer is there (a unit that
	// changed, a label a tenant changed).
	r.setBucket(obj, ticket.Unit)
	oldPhase, oldReason := obj.Status.Phase, conditions.GetReason(obj, commonv1.ReadyCondition)
	neverDone := obj.Status.ObservedGeneration <= 0 // never Ready, never Stalled (-1: the CRD default)
	// The shard acts: a wait it reported is over.
	conditions.Delete(obj, workspacesv1.ShardAssignedCondition)
	defer func() {
		obj.Status.Message = reconciler.Truncate(obj.Status.Message, reconciler.MaxConditionMessage)
		if oldPhase != workspacesv1.PhaseRunning && obj.Status.Phase == workspacesv1.PhaseRunning {
			result.RequeueAfter = sooner(result.RequeueAfter, r.markRunning(w))
		}
		if w.holdStatus && retErr == nil {
			return // the first delivery's Deploying is written only if the release is not deployed soon (holdFirstWrite)
		}
		status.Summarize(obj, retErr)
		patchErr := reconciler.PatchStatus(ctx, sp, obj, false)
		if patchErr != nil {
			retErr = kerrors.NewAggregate([]error{retErr, patchErr})
		}
		if patchErr == nil && w.quotaRecords && r.Ledger != nil {
			r.Ledger.Settle(obj.UID, obj.Status.QuotaCharges)
		}
		if patchErr == nil && obj.ResourceVersion != readVersion && obj.DeletionTimestamp.IsZero() {
			r.written.Remember(obj.DeepCopy())
		}
		if patchErr == nil && neverDone && oldPhase != workspacesv1.PhaseRunning && obj.Status.Phase == workspacesv1.PhaseRunning {
			metrics.ObserveTimeToRunning(req.NamespacedName, obj.UID, obj.CreationTimestamp.Time)
		}
		r.notify(obj, oldPhase, oldReason)
		if retErr != nil {
			result = ctrl.Result{}
		}
	}()

	// Deletion comes before suspension: a suspended workspace can be deleted.
	w.obj = obj
	w.firstDelivery = (oldPhase == "" || oldPhase == workspacesv1.PhasePending) && !everDelivered(obj)
	if !obj.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, w)
	}
	if err := reconciler.EnsureFinalizer(ctx, sp, obj, workspacesv1.WorkspaceDeploymentFinalizer); err != nil {
		return ctrl.Result{}, err
	}
	if obj.Status.Phase == "" {
		obj.Status.Phase = workspacesv1.PhasePending
	}
	if v, ok := meta.ReconcileAnnotationValue(obj.GetAnnotations()); ok {
		w.requested = v != obj.Status.LastHandledReconcileAt
		obj.Status.LastHandledReconcileAt = v
	}
	return r.reconcile(ctx, w, sp)
}

// reconcile runs the workspace's steps in order; each either lets the next
// run or ends the reconciliation with a phase that says why.
func (r *Reconciler) reconcile(ctx context.Context, w *workspaceRun, sp *reconciler.Patcher) (ctrl.Result, error) {
	obj := w.obj
	w.persist = func(ctx context.Context) error {
		status.Summarize(obj, nil)
		return reconciler.PatchStatus(ctx, sp, obj, false)
	}
	steps := []func(context.Context, *workspaceRun) (stepResult, error){
		r.resolveClass,
		r.resolveCluster,
		r.lifecycle,
		r.suspended,
		r.resolvePriority,
		r.resolveResources,
		r.reconcilePrerequisites,
		r.admit,
		r.resume,
		r.deploy,
		r.halt,
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

// suspended ends the reconciliation of a suspended workspace after its
// lifecycle: spec.suspend pauses delivery, as Flux's suspend does — nothing
// is resolved, admitted, started or delivered for it — while its class's
// bounds still bind it: expiry, maxLifetime, idle culling and a stop run
// (lifecycle, which stops without delivering anything), and a stopped
// workspace stays scaled away. A suspended workspace that waited leaves the
// queues for GPUs and quota (claimsPlace); it keeps the time it queued.
func (r *Reconciler) suspended(ctx context.Context, w *workspaceRun) (stepResult, error) {
	obj := w.obj
	if !obj.Spec.Suspend || w.stopping != "" {
		return proceed, nil // a stop in Git mode commits the pause (deploy)
	}
	log.FromContext(ctx).V(1).Info("reconciliation is suspended")
	if obj.Status.Phase == workspacesv1.PhaseWaiting {
		obj.Status.Phase = workspacesv1.PhasePending
		obj.Status.Message = "reconciliation is suspended: the workspace left the queues for GPUs and quota until spec.suspend is false"
		conditions.Delete(obj, workspacesv1.GPUCapacityCondition)
		conditions.Delete(obj, workspacesv1.QuotaReservedCondition)
	}
	return stopWith(0), nil
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
	// serviceSetDigest is the applied-digest of the ServiceSet the sink
	// holds for the workspace: a cached ServiceSet without it predates the
	// apply and says nothing of the release.
	serviceSetDigest string
	// persist writes the status now, ahead of the reconciliation's end.
	persist func(context.Context) error
	// quotaRecords: the workspace's quota records were changed; once the
	// status is written, the changes they carry leave their quotas.
	quotaRecords bool
	// retry asks for another reconciliation after it, for work a step
	// could not finish without holding the others up.
	retry time.Duration
	// waits are what the workspace waits for when the reconciliation ends
	// (workspace_waits.go).
	waits []wake.Topic
	// priorityClass is the workspace's resolved WorkspacePriorityClass;
	// nil without one.
	priorityClass *workspacesv1.WorkspacePriorityClass
	// stopping is why the workspace stops; empty when it runs.
	stopping workspacesv1.StopReason
	// starting is set when a stopped workspace is to run again.
	starting bool
	// requested is set when a reconcile was asked for (Flux's
	// reconcile.fluxcd.io/requestedAt): a stopped workspace is checked in full.
	requested bool
	// firstDelivery is set when the stored workspace is Pending and was
	// never delivered: its next status write may wait for the release
	// (holdFirstWrite). delivered is what this reconcile's direct delivery
	// recorded, nil in Git mode or when nothing was delivered.
	firstDelivery bool
	delivered     *commonv1.ResourceInventory
	// holdStatus leaves the status unwritten at the end of the reconcile.
	holdStatus bool
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

// notify records an event when the workspace's phase changed.
// A Pending or Waiting workspace also gets one when what it waits for (the
// Ready reason, status.HoldReason) changes.
func (r *Reconciler) notify(obj *workspacesv1.WorkspaceDeployment, oldPhase workspacesv1.WorkspacePhase, oldReason string) {
	if r.EventRecorder == nil {
		return
	}
	if obj.Status.Phase == oldPhase || quietPhase(obj.Status.Phase) {
		r.notifyHold(obj, oldReason)
		return
	}
	eventType := corev1.EventTypeNormal
	reason := commonv1.PhaseReason(obj.Status.Phase)
	if obj.Status.Phase == workspacesv1.PhaseFailed {
		eventType = corev1.EventTypeWarning
		if obj.Status.FailureContext != nil && obj.Status.FailureContext.Reason != "" {
			reason = obj.Status.FailureContext.Reason
		}
	}
	if obj.Status.Phase == workspacesv1.PhaseWaiting {
		reason = status.WaitingReason(obj)
	}
	r.EventRecorder.Eventf(obj, nil, eventType, reason, "Reconcile", "%s", reconciler.Truncate(obj.Status.Message, 1000))
}

// notifyHold records an event when a Pending or Waiting workspace waits
// for something else than before, named by a specific reason.
func (r *Reconciler) notifyHold(obj *workspacesv1.WorkspaceDeployment, oldReason string) {
	phase := obj.Status.Phase
	if phase != workspacesv1.PhasePending && phase != workspacesv1.PhaseWaiting || !obj.DeletionTimestamp.IsZero() {
		return
	}
	reason := conditions.GetReason(obj, commonv1.ReadyCondition)
	if reason == oldReason || reason == commonv1.PhaseReason(phase) || reason == "" {
		return
	}
	r.EventRecorder.Eventf(obj, nil, corev1.EventTypeNormal, reason, "Reconcile", "%s", reconciler.Truncate(obj.Status.Message, 1000))
}

// quietPhase reports the phases a workspace passes through on its way to
// Running, which status shows and no event repeats: events are for
// outcomes (Running, Failed), for what holds a workspace up (Waiting) and
// for deletion, as the exalsius operator emits them only for failures and
// waits. One event per workspace on the happy path keeps its requests low.
func quietPhase(p workspacesv1.WorkspacePhase) bool {
	return p == workspacesv1.PhasePending || p == workspacesv1.PhaseDeploying || p == workspacesv1.PhaseStopped
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
//
// With shards, what is delivered carries the workspace's bucket label
// (shard.BucketLabel), so that only the shard of its unit caches it; the
// label is one the operator does not set either.
func workspaceOwner(obj *workspacesv1.WorkspaceDeployment) delivery.Owner {
	return delivery.Owner{Kind: "WorkspaceDeployment", Namespace: obj.Namespace, Name: obj.Name, UID: obj.UID,
		DeferAdoption: &delivery.DeferAdoption{MarkLabels: []string{plan.WorkspaceLabel, plan.WorkspaceOwnerNamespaceLabel, plan.ManagedByLabel,
			shard.BucketLabel}}}
}

// owner is workspaceOwner with, when sharded, the workspace's bucket label
// on everything delivered (Reconcile set it right before acting).
func (r *Reconciler) owner(obj *workspacesv1.WorkspaceDeployment) delivery.Owner {
	o := workspaceOwner(obj)
	if v := obj.Labels[shard.BucketLabel]; r.Shards.Enabled() && v != "" {
		o.Labels = map[string]string{shard.BucketLabel: v}
	}
	return o
}

func workspaceWatchOwner(obj *workspacesv1.WorkspaceDeployment) string {
	return "workspace/" + obj.Namespace + "/" + obj.Name
}
