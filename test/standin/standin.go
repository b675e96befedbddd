// Package standin plays k0rdent's part against an envtest control plane,
// where kcm cannot run: a controller that validates ClusterDeployments the
// way kcm does (ClusterTemplate valid, Credential ready), reports kcm's
// conditions, writes the child cluster's kubeconfig Secret
// <cd>-kubeconfig (key "value") once the cluster is "provisioned", and holds
// kcm's finalizer until the ClusterDeployment is deleted. Annotations on a
// ClusterDeployment make it fail (AnnotationFail) or take time to provision
// and delete (AnnotationDelay). The services part plugs in through the
// Services interface; ServiceSets implements it: a ServiceSet controller that
// installs every service as a Helm release, from a chart embedded in this
// package (ChartWorkspace, ChartWorkspaceHub, ChartPrerequisite), on the
// child cluster, and reports the states kcm's Sveltos adapter reports. Like
// Sveltos it upgrades a release only when the service's inputs change, and
// a ServiceSet carrying kcm's pause annotation gets no Helm action at all
// (nor, once deleted, its finalizer removed) until the annotation goes.
// Annotations on ServiceTemplates are its test knobs (AnnotationChart,
// AnnotationFail, AnnotationDelay, AnnotationHang).
package standin

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
)

// Test knobs, set as annotations on a ClusterDeployment.
const (
	// AnnotationFail makes the ClusterDeployment fail: Ready and
	// CAPIClusterSummary become False/Failed with the annotation's value as
	// message, and its kubeconfig Secret is removed.
	AnnotationFail = "standin.apiary.dev/fail"
	// AnnotationDelay (a Go duration, e.g. "2s") makes provisioning take that
	// long (Ready False/Progressing meanwhile) and delays the removal of the
	// finalizer by as much once the ClusterDeployment is deleted.
	AnnotationDelay = "standin.apiary.dev/delay"
)

// ReadyMessage is the message of a True Ready condition, as kcm writes it.
const ReadyMessage = "Object is ready"

// StandIn is the controller that plays kcm's part for ClusterDeployments.
// Set its fields before SetupWithManager; KubeconfigFor and Services may be
// called from several goroutines.
type StandIn struct {
	// Client reaches the management cluster; nil means the manager's (cached)
	// client, which keeps the stand-in's steady state free of API requests.
	Client client.Client

	// ChildKubeconfig is the kubeconfig written into every ClusterDeployment's
	// <cd>-kubeconfig Secret, unless KubeconfigFor is set.
	ChildKubeconfig []byte

	// KubeconfigFor, when set, gives the kubeconfig of one ClusterDeployment
	// instead of ChildKubeconfig, so tests can point clusters at different
	// control planes or at an unreachable one (see UnreachableKubeconfig).
	// An empty result means the cluster has no kubeconfig Secret, as for an
	// adopted cluster.
	KubeconfigFor func(cd *k0rdentv1beta1.ClusterDeployment) []byte

	// Services, when set, reports the services of provisioned clusters and
	// removes them on deletion (kcm's ServiceSet part). Nil means no
	// ServicesInReadyState condition and nothing to remove.
	Services Services

	// ServicesUnreported leaves the services out of the ClusterDeployments'
	// status (status.services, ServicesInReadyState), as a kcm whose
	// ClusterDeployment controller has not run since the ServiceSets
	// changed: only the ServiceSets' own events tell of their services.
	// They are still removed on deletion.
	ServicesUnreported bool

	// Workers are the concurrent reconciles of its ClusterDeployment and
	// ServiceSet controllers; 0 means one, as the suites run it. A benchmark
	// raises it so that the stand-in's own pace (three writes a ServiceSet,
	// one at a time) does not bound what it measures.
	Workers int

	// provisioning and deleting record when each ClusterDeployment started
	// provisioning and deleting, for AnnotationDelay.
	provisioning, deleting startTimes
}

// SetupWithManager registers the controller with a manager. It watches
// ClusterDeployments, their kubeconfig Secrets, ClusterTemplates and
// Credentials, and ServiceSets when Services is set. Several stand-ins may
// run in one process.
func (s *StandIn) SetupWithManager(mgr ctrl.Manager) error {
	if s.Client == nil {
		s.Client = mgr.GetClient()
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("standin-clusterdeployment").
		For(&k0rdentv1beta1.ClusterDeployment{}).
		Owns(&corev1.Secret{}).
		Watches(&k0rdentv1beta1.ClusterTemplate{}, handler.EnqueueRequestsFromMapFunc(referencing(mgr.GetClient(),
			func(cd *k0rdentv1beta1.ClusterDeployment) string { return cd.Spec.Template })),
			builder.WithPredicates(predicate.ResourceVersionChangedPredicate{})).
		Watches(&k0rdentv1beta1.Credential{}, handler.EnqueueRequestsFromMapFunc(referencing(mgr.GetClient(),
			func(cd *k0rdentv1beta1.ClusterDeployment) string { return cd.Spec.Credential })),
			builder.WithPredicates(predicate.ResourceVersionChangedPredicate{})).
		WithOptions(controller.Options{SkipNameValidation: ptr.To(true), MaxConcurrentReconciles: max(s.Workers, 1)})
	if s.Services != nil && !s.ServicesUnreported {
		b = b.Watches(&k0rdentv1beta1.ServiceSet{}, handler.EnqueueRequestsFromMapFunc(
			func(_ context.Context, o client.Object) []reconcile.Request {
				ss, ok := o.(*k0rdentv1beta1.ServiceSet)
				if !ok || ss.Spec.Cluster == "" {
					return nil
				}
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ss.Namespace, Name: ss.Spec.Cluster}}}
			}))
	}
	if err := b.Complete(s); err != nil {
		return fmt.Errorf("setting up the k0rdent stand-in: %w", err)
	}
	return nil
}

// referencing maps an object to the ClusterDeployments of its namespace whose
// reference (given by ref) names it, listed from the manager's cache.
func referencing(c client.Reader, ref func(*k0rdentv1beta1.ClusterDeployment) string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		var cds k0rdentv1beta1.ClusterDeploymentList
		if err := c.List(ctx, &cds, client.InNamespace(o.GetNamespace())); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "listing ClusterDeployments", "namespace", o.GetNamespace())
			return nil
		}
		var out []reconcile.Request
		for i := range cds.Items {
			if ref(&cds.Items[i]) == o.GetName() {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&cds.Items[i])})
			}
		}
		return out
	}
}

// Reconcile plays kcm's ClusterDeployment controller for one object.
func (s *StandIn) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	cd := &k0rdentv1beta1.ClusterDeployment{}
	if err := s.Client.Get(ctx, req.NamespacedName, cd); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !cd.DeletionTimestamp.IsZero() {
		return s.reconcileDelete(ctx, cd)
	}
	if !controllerutil.ContainsFinalizer(cd, k0rdentv1beta1.ClusterDeploymentFinalizer) {
		patch := client.MergeFromWithOptions(cd.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.AddFinalizer(cd, k0rdentv1beta1.ClusterDeploymentFinalizer)
		if err := s.Client.Patch(ctx, cd, patch); err != nil {
			return reconcile.Result{}, fmt.Errorf("adding finalizer to ClusterDeployment %s: %w", req, err)
		}
	}
	return s.reconcileNormal(ctx, cd)
}

// reconcileDelete removes the services, the kubeconfig Secret and then the
// finalizer, after AnnotationDelay when it is set.
func (s *StandIn) reconcileDelete(ctx context.Context, cd *k0rdentv1beta1.ClusterDeployment) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(cd, k0rdentv1beta1.ClusterDeploymentFinalizer) {
		s.forget(cd.UID)
		return reconcile.Result{}, nil
	}
	wait := time.Duration(0)
	if delay, err := delayOf(cd); err == nil && delay > 0 {
		wait = time.Until(s.deleting.since(cd.UID).Add(delay))
	}
	done := true
	if s.Services != nil {
		var err error
		if done, err = s.Services.Cleanup(ctx, cd); err != nil {
			return reconcile.Result{}, fmt.Errorf("removing the services of ClusterDeployment %s/%s: %w", cd.Namespace, cd.Name, err)
		}
	}
	if wait > 0 || !done {
		status := cd.Status.DeepCopy()
		status.ObservedGeneration = cd.Generation
		setCondition(status, cd.Generation, k0rdentv1beta1.DeletingCondition, true, k0rdentv1beta1.DeletingReason, "Deleting ClusterDeployment")
		setReady(status, cd.Generation)
		if err := s.patchStatus(ctx, cd, status); err != nil {
			return reconcile.Result{}, err
		}
		return reconcile.Result{RequeueAfter: max(wait, time.Second)}, nil
	}
	if err := s.deleteKubeconfig(ctx, cd); err != nil {
		return reconcile.Result{}, err
	}
	patch := client.MergeFromWithOptions(cd.DeepCopy(), client.MergeFromWithOptimisticLock{})
	controllerutil.RemoveFinalizer(cd, k0rdentv1beta1.ClusterDeploymentFinalizer)
	if err := s.Client.Patch(ctx, cd, patch); err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, fmt.Errorf("removing finalizer from ClusterDeployment %s/%s: %w", cd.Namespace, cd.Name, err)
	}
	s.forget(cd.UID)
	return reconcile.Result{}, nil
}

// forget drops the timing state of a ClusterDeployment.
func (s *StandIn) forget(uid types.UID) {
	s.provisioning.forget(uid)
	s.deleting.forget(uid)
}

// startTimes records when ClusterDeployments entered a timed phase; the
// zero value is ready to use.
type startTimes struct {
	mu sync.Mutex
	m  map[types.UID]time.Time
}

// since returns when the ClusterDeployment entered the phase, recording now
// if it had not yet.
func (t *startTimes) since(uid types.UID) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.m == nil {
		t.m = map[types.UID]time.Time{}
	}
	start, ok := t.m[uid]
	if !ok {
		start = time.Now()
		t.m[uid] = start
	}
	return start
}

// forget drops the record of a ClusterDeployment.
func (t *startTimes) forget(uid types.UID) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, uid)
}

// delayOf parses AnnotationDelay; absent means 0.
func delayOf(cd *k0rdentv1beta1.ClusterDeployment) (time.Duration, error) {
	return parseDelay(cd.Annotations)
}

// parseDelay parses AnnotationDelay of an object's annotations; absent means 0.
func parseDelay(annotations map[string]string) (time.Duration, error) {
	v, ok := annotations[AnnotationDelay]
	if !ok {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("annotation %s=%q is not a non-negative duration", AnnotationDelay, v)
	}
	return d, nil
}
