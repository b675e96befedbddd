package workspace

import (
	"context"
	"fmt"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/log"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/reconciler"
	"github.com/apiaryhq/apiary/internal/controller/workspace/desired"
	"github.com/apiaryhq/apiary/internal/delivery"
	"github.com/apiaryhq/apiary/internal/delivery/canon"
	"github.com/apiaryhq/apiary/internal/delivery/seal"
	"github.com/apiaryhq/apiary/internal/wake"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
)

// serviceSetName is the name of a workspace's ServiceSet.
func serviceSetName(obj *workspacesv1.WorkspaceDeployment) string {
	return plan.ServiceSetName(plan.ClusterKey(obj).Name, obj.Name)
}

// releaseName is the Helm release (and ServiceSet entry) of a workspace.
func releaseName(obj *workspacesv1.WorkspaceDeployment) string {
	return plan.ReleaseName(plan.ClusterKey(obj).Name, obj.Name)
}

// childNamespace is a workspace's namespace on the child cluster.
func childNamespace(workspace string) string { return plan.ChildNamespace(workspace) }

// deploy renders the workspace's objects and hands them to the sink. The
// child namespace is prepared first, whenever the rendered objects change,
// and relabelled when its mesh labels do (e.g. a new --workspace-mesh-mode).
func (r *Reconciler) deploy(ctx context.Context, w *workspaceRun) (stepResult, error) {
	obj := w.obj
	if w.stopping != "" && !everDelivered(obj) {
		return proceed, nil // nothing to pause
	}
	set, problem, err := r.desired.Desired(ctx, desired.Input{Obj: obj, Class: w.class, CDKey: w.cdKey,
		Resolved: w.resolved})
	switch {
	case w.stopping != "" && err != nil:
		return r.pauseDelivered(ctx, w, err.Error())
	case w.stopping != "" && problem != nil:
		return r.pauseDelivered(ctx, w, problem.Message)
	case err != nil:
		return stopWith(0), err
	case problem != nil && problem.Wait:
		pending(obj, "%s", problem.Message)
		return stopWith(30 * time.Second), nil
	case problem != nil:
		r.fail(ctx, obj, problem.Reason, problem.Message)
		return stopWith(0), nil
	}
	obj.Status.ResolvedResources = w.resolved.DeepCopy()
	obj.Status.ServiceEntryName = releaseName(obj)
	if obj.Status.Delivery == nil {
		obj.Status.Delivery = &commonv1.DeliveryStatus{}
	}
	d := obj.Status.Delivery
	changed := d.Digest != set.Digest
	if !r.namespaces.Enrolled(obj, w.cdKey, set.Digest) {
		if res, err := r.ensureChildNamespace(ctx, w, !changed, set.Digest); err != nil || res.stop {
			return res, err
		}
	}
	g, err := reconciler.GitOf(ctx, r.Sink, obj.Namespace)
	if err != nil {
		return stopWith(0), err
	}
	d.Mode = delivery.ModeDirect
	if g != nil {
		d.Mode = delivery.ModeGit
	}
	if g == nil {
		if err := r.desired.KeepAdoptedValues(ctx, set.Objects); err != nil {
			return stopWith(0), err
		}
	}
	objs := set.Objects
	if w.stopping != "" {
		if why := driftRevertsScale(obj, objs); why != "" {
			r.fail(ctx, obj, workspacesv1.StopUnsupportedReason, why)
			return stopWith(0), nil
		}
		objs = pauseServiceSet(obj, objs)
	}
	// The last step before delivery: what reaches the chart is what was admitted.
	if err := desired.CheckAdmitted(objs, w.class, w.resolved); err != nil {
		r.fail(ctx, obj, workspacesv1.InjectedValueOverriddenReason, err.Error())
		return stopWith(0), nil
	}
	result, err := r.Sink.Apply(ctx, r.owner(obj), objs, d.Inventory)
	reconciler.RecordApply(d, result)
	var rev string
	if g != nil {
		rev = reconciler.RecordCommit(obj, d, result, err)
	}
	if err != nil {
		conditions.MarkFalse(obj, commonv1.DeliveredCondition, commonv1.DeliveryFailedReason, "%s", err)
		switch {
		case seal.IsNoRecipients(err):
			r.fail(ctx, obj, commonv1.NoEncryptionRecipientsReason, fmt.Sprintf("the workspace carries secret values, which Git delivery commits only encrypted: %s", err))
			return stopWith(0), nil
		case delivery.IsHeldByOther(err):
			r.fail(ctx, obj, workspacesv1.NameConflictReason, fmt.Sprintf("another workspace holds this workspace's objects by name: %s", err))
			return stopWith(30 * time.Second), nil
		case reconciler.AllInvalid(err):
			r.fail(ctx, obj, commonv1.DeliveryFailedReason, fmt.Sprintf("the API server refused the workspace's objects: %s", err))
			return stopWith(0), nil
		}
		return stopWith(0), fmt.Errorf("delivering the workspace's objects: %w", err)
	}
	if g == nil && result != nil {
		w.delivered = result.Inventory
	}
	conditions.MarkTrue(obj, commonv1.DeliveredCondition, commonv1.SucceededReason, "delivered %d objects (%s)", len(set.Objects), d.Mode)
	w.serviceSetDigest = serviceSetDigest(obj, set.Objects, result)
	if changed {
		d.Digest = set.Digest
		conditions.MarkFalse(obj, workspacesv1.HelmReleaseReadyCondition, workspacesv1.HelmReleaseNotReadyReason,
			"waiting for release %s (%s) to be deployed", releaseName(obj), shortDigest(set.Digest))
	}
	return r.awaitSync(ctx, w, g, d, rev)
}

// awaitSync holds a Git-delivered workspace in Deploying (Stopped while it
// stops) until Flux applied the commit holding its objects; the sink's
// notices and the Kustomization watch bring it back, so nothing polls.
func (r *Reconciler) awaitSync(ctx context.Context, w *workspaceRun, g reconciler.GitReadback, d *commonv1.DeliveryStatus, rev string) (stepResult, error) {
	obj := w.obj
	if g == nil {
		return proceed, nil
	}
	if err := reconciler.ObserveSync(ctx, g, r.SyncReader, r.owner(obj), obj, d, rev); err != nil {
		return stopWith(0), err
	}
	if reason, msg, pending := reconciler.GitPending(obj); pending {
		obj.Status.Phase = workspacesv1.PhaseDeploying
		obj.Status.Message = fmt.Sprintf("%s: %s", reason, msg)
		if w.stopping != "" {
			// The commit holds the pause: the workspace is stopping.
			obj.Status.Phase = workspacesv1.PhaseStopped
			obj.Status.Message = fmt.Sprintf("stopping (%s): %s: %s", w.stopping, reason, msg)
		}
		w.waitFor(wake.Topic{Kind: waitSync})
		return stopWith(0), nil
	}
	return proceed, nil
}

// ensureChildNamespace prepares the workspace's namespace on its child
// (package childns). With refresh (the release is delivered already, only
// the labels changed), the child being out of reach does not hold the
// workspace up: it is tried again later.
func (r *Reconciler) ensureChildNamespace(ctx context.Context, w *workspaceRun, refresh bool, digest string) (stepResult, error) {
	obj := w.obj
	out, err := r.namespaces.Ensure(ctx, obj, w.cdKey, digest, !refresh)
	later := func(d time.Duration, why string) (stepResult, error) {
		log.FromContext(ctx).V(1).Info("relabelling the workspace's namespace later", "namespace", childNamespace(obj.Name), "reason", why)
		w.retry = sooner(w.retry, d)
		return proceed, nil
	}
	switch {
	case err != nil && refresh:
		return later(30*time.Second, err.Error())
	case err != nil:
		return stopWith(0), err
	case out.Ready:
		return proceed, nil
	case out.Conflict:
		conditions.MarkFalse(obj, workspacesv1.ClusterDeploymentResolvedCondition, workspacesv1.NamespaceConflictReason, "%s", out.Message)
		r.fail(ctx, obj, workspacesv1.NamespaceConflictReason, out.Message)
		return stopWith(0), nil
	}
	if out.Unreachable {
		w.waitFor(clusterTopic(waitChild, w.cdKey))
	}
	if refresh {
		return later(out.Retry, out.Message)
	}
	pending(obj, "%s", out.Message)
	return stopWith(out.Retry), nil
}

// serviceSetDigest is the applied-digest the sink reports for the
// workspace's ServiceSet; "" when the set holds none.
func serviceSetDigest(obj *workspacesv1.WorkspaceDeployment, objs []*unstructured.Unstructured, result *delivery.Result) string {
	if result == nil {
		return ""
	}
	name := serviceSetName(obj)
	for _, o := range objs {
		if o.GetKind() == "ServiceSet" && o.GetName() == name {
			return result.Digests[canon.IDOf(o).String()]
		}
	}
	return ""
}

// everDelivered reports whether the sink holds objects of the workspace.
func everDelivered(obj *workspacesv1.WorkspaceDeployment) bool {
	d := obj.Status.Delivery
	return d != nil && d.Inventory != nil && len(d.Inventory.Entries) > 0
}

func shortDigest(d string) string {
	if len(d) > 19 {
		return d[:19]
	}
	return d
}
