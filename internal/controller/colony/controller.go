package colony

import (
	"context"
	"fmt"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/fluxcd/pkg/runtime/jitter"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	"github.com/apiaryhq/apiary/internal/childcluster"
	"github.com/apiaryhq/apiary/internal/controller/reconciler"
	"github.com/apiaryhq/apiary/internal/delivery"
	"github.com/apiaryhq/apiary/internal/metrics"
	"github.com/apiaryhq/apiary/internal/render"
	"github.com/apiaryhq/apiary/internal/shard"
)

// +kubebuilder:rbac:groups=infra.exalsius.ai,resources=colonies,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=infra.exalsius.ai,resources=colonies/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=infra.exalsius.ai,resources=colonies/finalizers,verbs=update
// +kubebuilder:rbac:groups=k0rdent.mirantis.com,resources=clusterdeployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler turns each entry of a Colony into a k0rdent
// ClusterDeployment rendered from a bundle and handed to a delivery sink, and
// reports the clusters' readiness, an aggregated kubeconfig Secret and the
// GPU inventory of their nodes.
type Reconciler struct {
	client.Client
	// APIReader reads objects the manager does not cache (bundle ConfigMaps).
	APIReader client.Reader
	// EventRecorder records Kubernetes events on Colonies.
	EventRecorder events.EventRecorder
	// Bundles resolves bundles: by name, or from a ConfigMap.
	Bundles *render.Resolver
	// Sink delivers the rendered objects.
	Sink delivery.Sink
	// SyncReader reads Flux Kustomizations (the manager's cache) in Git mode.
	SyncReader client.Reader
	// Children reaches the child clusters.
	Children *childcluster.Manager
	// InventoryInterval is the period of the GPU inventory resync; 5m when zero.
	InventoryInterval time.Duration
	// Settings are passed to bundles as .Input.operator.
	Settings map[string]any
	// Shards decides which shard acts on a Colony; every Colony is this
	// process's when nil.
	Shards *shard.Gate
}

// Options configure the Colony controller.
type Options struct {
	MaxConcurrentReconciles int
}

// Reconcile is the entry point of a Colony's reconciliation.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	obj := &infrav1.Colony{}
	if err := r.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, reconciler.IgnoreGone(metrics.KindColony, req, err)
	}
	// A Colony that no shard holds is claimed in the write that adds its
	// finalizer.
	ticket, err := r.Shards.Enter(ctx, shard.Unit{Kind: shard.KindColony, NamespacedName: req.NamespacedName},
		func(o client.Object) {
			if o.GetDeletionTimestamp().IsZero() {
				controllerutil.AddFinalizer(o, infrav1.ColonyFinalizer)
			}
		})
	if err != nil {
		return ctrl.Result{}, err
	}
	if !ticket.Acting() {
		return ctrl.Result{RequeueAfter: ticket.RequeueAfter}, nil
	}
	defer ticket.Done()
	ctx = ticket.WithUnit(ctx) // the Git sinks record the unit of what they commit
	if c, ok := ticket.Holder.(*infrav1.Colony); ok {
		obj = c
	}
	defer metrics.ObserveReconcile(metrics.KindColony, req.NamespacedName, time.Now())
	sp := reconciler.NewPatcher(r.Client, obj)
	oldPhase := obj.Status.Phase

	defer func() {
		summarizeColony(obj, retErr)
		if err := reconciler.PatchStatus(ctx, sp, obj, false); err != nil {
			retErr = kerrors.NewAggregate([]error{retErr, err})
		}
		r.notify(obj, oldPhase)
		if retErr != nil {
			result = ctrl.Result{}
		}
	}()

	if !obj.DeletionTimestamp.IsZero() {
		return r.reconcileDelete(ctx, obj)
	}
	if err := reconciler.EnsureFinalizer(ctx, sp, obj, infrav1.ColonyFinalizer); err != nil {
		return ctrl.Result{}, err
	}
	if obj.Spec.Suspend {
		log.FromContext(ctx).V(1).Info("reconciliation is suspended")
		return ctrl.Result{}, nil
	}
	if v, ok := meta.ReconcileAnnotationValue(obj.GetAnnotations()); ok {
		obj.Status.LastHandledReconcileAt = v
	}
	return r.reconcile(ctx, obj)
}

// reconcile runs the steps of a Colony's reconciliation in order.
func (r *Reconciler) reconcile(ctx context.Context, obj *infrav1.Colony) (ctrl.Result, error) {
	if obj.Generation != obj.Status.ObservedGeneration {
		conditions.MarkReconciling(obj, commonv1.ProgressingReason, "processing generation %d", obj.Generation)
	}
	rendered := r.renderClusters(ctx, obj)
	deliverErr := r.deliver(ctx, obj, rendered)
	// The clusters are observed even when delivery failed, so the status
	// (whose counts are required) can always be written and says which
	// clusters exist.
	r.observeClusters(obj, rendered, r.clusterDeployments(ctx, obj, rendered))
	if deliverErr != nil {
		return ctrl.Result{}, deliverErr
	}
	if err := r.reconcileKubeconfigs(ctx, obj); err != nil {
		return ctrl.Result{}, err
	}
	r.reconcileGPUInventory(ctx, obj)
	summarizeClusters(obj, rendered)
	return ctrl.Result{RequeueAfter: jitter.JitteredIntervalDuration(r.inventoryInterval())}, nil
}

// reconcileDelete removes the Colony's objects, waits until they are gone,
// then releases the Colony.
func (r *Reconciler) reconcileDelete(ctx context.Context, obj *infrav1.Colony) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(obj, infrav1.ColonyFinalizer) {
		return ctrl.Result{}, nil
	}
	obj.Status.Phase = infrav1.ColonyPhaseDeleting
	var inv *commonv1.ResourceInventory
	if obj.Status.Delivery != nil {
		inv = obj.Status.Delivery.Inventory
	}
	done, err := r.Sink.Delete(ctx, colonyOwner(obj), inv)
	if err != nil {
		conditions.MarkFalse(obj, commonv1.DeliveredCondition, commonv1.DeliveryFailedReason, "%s", err)
		return ctrl.Result{}, fmt.Errorf("deleting the Colony's objects: %w", err)
	}
	if !done {
		conditions.MarkReconciling(obj, commonv1.DeletingReason, "waiting for the ClusterDeployments to be deleted")
		return ctrl.Result{RequeueAfter: 10 * time.Second}, nil
	}
	r.releaseChildren(obj, nil)
	secret := &corev1.Secret{}
	secret.Name, secret.Namespace = kubeconfigsSecretName(obj), obj.Namespace
	if err := r.Delete(ctx, secret); client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, fmt.Errorf("deleting Secret %s: %w", secret.Name, err)
	}
	controllerutil.RemoveFinalizer(obj, infrav1.ColonyFinalizer)
	return ctrl.Result{}, nil
}

// notify records an event when the Colony's phase changed.
func (r *Reconciler) notify(obj *infrav1.Colony, oldPhase infrav1.ColonyPhase) {
	if r.EventRecorder == nil || obj.Status.Phase == oldPhase {
		return
	}
	eventType := corev1.EventTypeNormal
	switch obj.Status.Phase {
	case infrav1.ColonyPhaseDegraded, infrav1.ColonyPhaseFailed:
		eventType = corev1.EventTypeWarning
	}
	reason := conditions.GetReason(obj, infrav1.ClustersReadyCondition)
	if reason == "" {
		reason = commonv1.PhaseReason(obj.Status.Phase)
	}
	r.EventRecorder.Eventf(obj, nil, eventType, reason, "Reconcile", "%s: %s", obj.Status.Phase,
		conditions.GetMessage(obj, commonv1.ReadyCondition))
}

func (r *Reconciler) inventoryInterval() time.Duration {
	if r.InventoryInterval > 0 {
		return r.InventoryInterval
	}
	return 5 * time.Minute
}

// colonyOwner identifies a Colony to the delivery sink.
func colonyOwner(obj *infrav1.Colony) delivery.Owner {
	return delivery.Owner{Kind: infrav1.GroupVersion.WithKind("Colony").Kind, Namespace: obj.Namespace, Name: obj.Name, UID: obj.UID}
}
