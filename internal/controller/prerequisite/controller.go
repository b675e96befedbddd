package prerequisite

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/index"
	"github.com/apiaryhq/apiary/internal/controller/reconciler"
	"github.com/apiaryhq/apiary/internal/delivery"
	"github.com/apiaryhq/apiary/internal/delivery/canon"
	"github.com/apiaryhq/apiary/internal/prerequisite"
	"github.com/apiaryhq/apiary/internal/shard"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
)

// +kubebuilder:rbac:groups=k0rdent.mirantis.com,resources=servicesets,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups=k0rdent.mirantis.com,resources=servicetemplates,verbs=get;list;watch
// +kubebuilder:rbac:groups=workspaces.exalsius.ai,resources=workspacedeployments;workspaceclasses,verbs=get;list;watch

// removalPollInterval is how often a removal that is not done yet (the
// release is uninstalling, or Flux has not pruned it) is looked at, besides
// the ServiceSet's own events.
const removalPollInterval = 5 * time.Second

// Reconciler removes the shared prerequisite ServiceSets that
// no workspace of their cluster needs any more, GracePeriod after the last
// one went (prerequisite.PlanRemoval). The time it became unused is kept
// in the annotation prerequisite.AnnotationUnusedSince, so a restart keeps
// the deadline; a workspace that needs it again within the period cancels
// the removal. It acts only on ServiceSets that Apiary delivered as
// prerequisites (never on the Colony's services, nor on ServiceSets another
// controller made), and deletes them through the delivery sink, so that in
// Git mode their files leave the repository. It runs only when GracePeriod
// is set, reacts to watches and wakes at each deadline.
type Reconciler struct {
	client.Client
	EventRecorder events.EventRecorder
	Sink          delivery.Sink
	GracePeriod   time.Duration
	// Shards decides which shard acts on the ServiceSet's cluster.
	Shards *shard.Gate

	// Installs is the memory of installs the workspace controller shares.
	Installs *prerequisite.Writes

	now func() time.Time

	mu       sync.Mutex
	removing map[types.NamespacedName]bool
}

// Reconcile is the entry point of a prerequisite ServiceSet's reconciliation.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (result ctrl.Result, retErr error) {
	ss := &k0rdentv1beta1.ServiceSet{}
	if err := r.Get(ctx, req.NamespacedName, ss); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, r.finishRemoval(ctx, req.NamespacedName)
		}
		return ctrl.Result{}, err
	}
	if ss.Labels[plan.RoleLabel] != plan.RolePrerequisite || !prerequisite.Owner(ss.Namespace, ss.Name).Owns(ss.Labels) ||
		!ss.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil // not Apiary's prerequisite, or going already
	}
	if r.Shards.Enabled() {
		u, err := r.Shards.UnitOfCluster(ctx, types.NamespacedName{Namespace: ss.Namespace, Name: ss.Spec.Cluster})
		if err != nil {
			return ctrl.Result{}, err
		}
		ticket, err := r.Shards.Enter(ctx, u)
		if err != nil || !ticket.Acting() {
			return ctrl.Result{RequeueAfter: ticket.RequeueAfter}, err
		}
		defer ticket.Done()
		ctx = ticket.WithUnit(ctx) // the Git sinks record the unit of what they commit
	}
	if r.isRemoving(req.NamespacedName) {
		return r.remove(ctx, ss) // decided: carried through, whoever comes meanwhile
	}
	sp := reconciler.NewPatcher(r.Client, ss)
	defer func() {
		if err := sp.Patch(ctx, ss, false); err != nil {
			retErr = kerrors.NewAggregate([]error{retErr, fmt.Errorf("recording the prerequisite's use: %w", err)})
		}
	}()
	needed, lastGone, err := r.need(ctx, ss)
	if err != nil {
		return ctrl.Result{}, err
	}
	p := prerequisite.PlanRemoval(needed, lastGone, prerequisite.UnusedSince(ss.Annotations), r.GracePeriod, r.now())
	switch p.Action {
	case prerequisite.ClearUnused:
		r.event(ss, workspacesv1.PrerequisiteNeededAgainReason, "a workspace needs the prerequisite again: its removal is cancelled")
	case prerequisite.MarkUnused:
		if ss.Annotations == nil {
			ss.Annotations = map[string]string{}
		}
		ss.Annotations[prerequisite.AnnotationUnusedSince] = prerequisite.FormatUnusedSince(p.Since)
		r.event(ss, workspacesv1.PrerequisiteUnusedReason, "no workspace of the cluster needs the prerequisite since %s: it is removed at %s unless one does",
			prerequisite.FormatUnusedSince(p.Since), prerequisite.FormatUnusedSince(p.Since.Add(r.GracePeriod)))
		return ctrl.Result{RequeueAfter: p.After}, nil
	case prerequisite.Wait:
		return ctrl.Result{RequeueAfter: p.After}, nil
	case prerequisite.Remove:
		r.event(ss, workspacesv1.PrerequisiteRemovedReason, "no workspace of the cluster needed the prerequisite for %s: removing it", r.GracePeriod)
		r.setRemoving(req.NamespacedName, true)
		r.Installs.MarkRemoving(ss.Namespace, ss.Name)
		return r.remove(ctx, ss)
	}
	if needed {
		delete(ss.Annotations, prerequisite.AnnotationUnusedSince) // also a record that does not parse
	}
	return ctrl.Result{}, nil
}

// need reports whether a workspace of the ServiceSet's cluster that is not
// being deleted needs what it installs (the same template, or one with the
// same key), and the latest deletion time of those being deleted that do.
// A workspace whose class cannot be read counts as needing it.
func (r *Reconciler) need(ctx context.Context, ss *k0rdentv1beta1.ServiceSet) (bool, time.Time, error) {
	var lastGone time.Time
	entry := prerequisite.Entry(ss)
	if entry == nil {
		return true, lastGone, nil // installs nothing Apiary can tell: left alone
	}
	installed, err := prerequisite.InstalledTemplate(ctx, r.Client, ss.Namespace, entry.Template)
	if err != nil {
		return false, lastGone, err
	}
	list := &workspacesv1.WorkspaceDeploymentList{}
	cd := client.ObjectKey{Namespace: ss.Namespace, Name: ss.Spec.Cluster}
	if err := r.List(ctx, list, client.MatchingFields{index.WorkspaceCluster: cd.String()}); err != nil {
		return false, lastGone, fmt.Errorf("listing the workspaces of %s: %w", cd, err)
	}
	for i := range list.Items {
		w := &list.Items[i]
		uses, err := r.uses(ctx, w, installed)
		if err != nil {
			return false, lastGone, err
		}
		switch {
		case !uses:
		case w.DeletionTimestamp.IsZero():
			return true, time.Time{}, nil
		case w.DeletionTimestamp.After(lastGone):
			lastGone = w.DeletionTimestamp.Time
		}
	}
	return false, lastGone, nil
}

// uses reports whether a workspace's class lists a prerequisite that is
// the installed template's; true when the class cannot be read.
func (r *Reconciler) uses(ctx context.Context, w *workspacesv1.WorkspaceDeployment, installed prerequisite.Template) (bool, error) {
	class := &workspacesv1.WorkspaceClass{}
	if err := r.Get(ctx, client.ObjectKey{Name: w.Spec.WorkspaceClassRef}, class); err != nil {
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, fmt.Errorf("reading WorkspaceClass %s: %w", w.Spec.WorkspaceClassRef, err)
	}
	for _, p := range class.Spec.Prerequisites {
		t, err := prerequisite.TemplateInfo(ctx, r.Client, p.ServiceTemplate.Name, plan.TemplateKey(p.ServiceTemplate))
		if err != nil {
			return false, err
		}
		if t.Same(installed) {
			return true, nil
		}
	}
	return false, nil
}

// remove deletes the ServiceSet through the sink and looks again until it
// is gone (its release uninstalled; in Git mode, pruned by Flux).
func (r *Reconciler) remove(ctx context.Context, ss *k0rdentv1beta1.ServiceSet) (ctrl.Result, error) {
	done, err := r.Sink.Delete(ctx, prerequisite.Owner(ss.Namespace, ss.Name), serviceSetInventory(ss.Namespace, ss.Name))
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("removing the prerequisite ServiceSet: %w", err)
	}
	if !done {
		return ctrl.Result{RequeueAfter: removalPollInterval}, nil
	}
	return ctrl.Result{}, r.finishRemoval(ctx, client.ObjectKeyFromObject(ss))
}

// finishRemoval lets the sink and the memory of installs forget a
// ServiceSet that is gone.
func (r *Reconciler) finishRemoval(ctx context.Context, key types.NamespacedName) error {
	r.Installs.Forget(key.Namespace, key.Name)
	if !r.isRemoving(key) {
		return nil
	}
	if _, err := r.Sink.Delete(ctx, prerequisite.Owner(key.Namespace, key.Name), serviceSetInventory(key.Namespace, key.Name)); err != nil {
		return fmt.Errorf("removing the prerequisite ServiceSet: %w", err)
	}
	r.setRemoving(key, false)
	log.FromContext(ctx).Info("removed an unused prerequisite", "serviceSet", key)
	return nil
}

// serviceSetInventory is the sink's inventory of one prerequisite: its ServiceSet.
func serviceSetInventory(namespace, name string) *commonv1.ResourceInventory {
	id := canon.ObjectID{Namespace: namespace, Name: name, Group: k0rdentv1beta1.GroupVersion.Group, Kind: k0rdentv1beta1.ServiceSetKind}
	return &commonv1.ResourceInventory{Entries: []commonv1.ResourceRef{{ID: id.String(), Version: k0rdentv1beta1.GroupVersion.Version}}}
}

func (r *Reconciler) isRemoving(key types.NamespacedName) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.removing[key]
}

func (r *Reconciler) setRemoving(key types.NamespacedName, on bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !on {
		delete(r.removing, key)
		return
	}
	if r.removing == nil {
		r.removing = map[types.NamespacedName]bool{}
	}
	r.removing[key] = true
}

func (r *Reconciler) event(ss *k0rdentv1beta1.ServiceSet, reason, format string, args ...any) {
	if r.EventRecorder != nil {
		r.EventRecorder.Eventf(ss, nil, corev1.EventTypeNormal, reason, "Reconcile", format, args...)
	}
}
