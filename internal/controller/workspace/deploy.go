package workspace

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/reconciler"
	"github.com/apiaryhq/apiary/internal/delivery"
	"github.com/apiaryhq/apiary/internal/mesh"
	"github.com/apiaryhq/apiary/internal/naming"
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
	desired, res, err := r.desired(ctx, w)
	if err != nil || res.stop {
		return res, err
	}
	obj.Status.ResolvedResources = w.resolved.DeepCopy()
	obj.Status.ServiceEntryName = releaseName(obj)
	if obj.Status.Delivery == nil {
		obj.Status.Delivery = &commonv1.DeliveryStatus{}
	}
	d := obj.Status.Delivery
	changed := d.Digest != desired.digest
	if !r.isEnrolled(w, desired.digest) {
		if res, err := r.ensureChildNamespace(ctx, w, !changed, desired.digest); err != nil || res.stop {
			return res, err
		}
	}
	d.Mode = r.Sink.Mode()
	if reconciler.AsGit(r.Sink) == nil {
		if err := r.keepAdoptedValues(ctx, desired.objects); err != nil {
			return stopWith(0), err
		}
	}
	result, err := r.Sink.Apply(ctx, workspaceOwner(obj), desired.objects, d.Inventory)
	if result != nil {
		d.Inventory = result.Inventory
		if result.Revision != "" {
			d.Revision = result.Revision
		}
		if len(result.Changed) > 0 {
			now := metav1.Now()
			d.LastDeliveredTime = &now
		}
	}
	var rev string
	if reconciler.AsGit(r.Sink) != nil {
		rev = reconciler.RecordCommit(obj, d, result, err)
	}
	if err != nil {
		conditions.MarkFalse(obj, commonv1.DeliveredCondition, commonv1.DeliveryFailedReason, "%s", err)
		switch {
		case delivery.IsNoRecipients(err):
			r.fail(ctx, obj, commonv1.NoEncryptionRecipientsReason, fmt.Sprintf("the workspace carries secret values, which Git delivery commits only encrypted: %s", err))
			return stopWith(0), nil
		case reconciler.AllInvalid(err):
			r.fail(ctx, obj, commonv1.DeliveryFailedReason, fmt.Sprintf("the API server refused the workspace's objects: %s", err))
			return stopWith(0), nil
		}
		return stopWith(0), fmt.Errorf("delivering the workspace's objects: %w", err)
	}
	conditions.MarkTrue(obj, commonv1.DeliveredCondition, commonv1.SucceededReason, "delivered %d objects (%s)", len(desired.objects), d.Mode)
	if changed {
		d.Digest = desired.digest
		conditions.MarkFalse(obj, workspacesv1.HelmReleaseReadyCondition, workspacesv1.HelmReleaseNotReadyReason,
			"waiting for release %s (%s) to be deployed", releaseName(obj), shortDigest(desired.digest))
	}
	return r.awaitSync(ctx, w, d, rev)
}

// awaitSync holds a Git-delivered workspace in Deploying until Flux applied
// the commit holding its objects; the sink's notices and the Kustomization
// watch bring it back, so nothing polls.
func (r *Reconciler) awaitSync(ctx context.Context, w *workspaceRun, d *commonv1.DeliveryStatus, rev string) (stepResult, error) {
	obj := w.obj
	g := reconciler.AsGit(r.Sink)
	if g == nil {
		return proceed, nil
	}
	if err := reconciler.ObserveSync(ctx, g, r.SyncReader, workspaceOwner(obj), obj, d, rev); err != nil {
		return stopWith(0), err
	}
	if reason, msg, pending := reconciler.GitPending(obj); pending {
		obj.Status.Phase = workspacesv1.PhaseDeploying
		obj.Status.Message = fmt.Sprintf("%s: %s", reason, msg)
		w.waitFor(wake.Topic{Kind: waitSync})
		return stopWith(0), nil
	}
	return proceed, nil
}

// observeRelease reads the workspace's release state from its ServiceSet.
func (r *Reconciler) observeRelease(ctx context.Context, w *workspaceRun) (stepResult, error) {
	obj := w.obj
	ss := &k0rdentv1beta1.ServiceSet{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: w.cdKey.Namespace, Name: serviceSetName(obj)}, ss); err != nil {
		if !apierrors.IsNotFound(err) {
			return stopWith(0), fmt.Errorf("reading ServiceSet: %w", err)
		}
		// Just applied, not in the cache yet: its create event brings the
		// workspace back. The message is the one of a ServiceSet that has
		// not deployed the release yet, so that neither step writes status.
		obj.Status.Phase, obj.Status.Message = workspacesv1.PhaseDeploying, deployingMessage(releaseName(obj), w.cdKey.Name)
		return stopWith(5 * time.Second), nil
	}
	name := releaseName(obj)
	var state *k0rdentv1beta1.ServiceState
	for i := range ss.Status.Services {
		if ss.Status.Services[i].Name == name {
			state = &ss.Status.Services[i]
		}
	}
	current := true
	for _, c := range ss.Status.Conditions {
		if c.ObservedGeneration < ss.Generation {
			current = false
		}
	}
	switch {
	case state != nil && state.State == k0rdentv1beta1.ServiceStateFailed:
		msg := "Helm release failed: " + state.FailureMessage
		conditions.MarkFalse(obj, workspacesv1.HelmReleaseReadyCondition, workspacesv1.HelmReleaseFailedReason, "%s", msg)
		r.fail(ctx, obj, workspacesv1.HelmReleaseFailedReason, msg)
		return stopWith(0), nil
	case state != nil && state.State == k0rdentv1beta1.ServiceStateDeployed && current:
		conditions.MarkTrue(obj, workspacesv1.HelmReleaseReadyCondition, workspacesv1.HelmReleaseDeployedReason, "release %s is deployed", name)
		obj.Status.Phase, obj.Status.Message = workspacesv1.PhaseRunning, "Workspace is running"
		return proceed, nil
	}
	seen := "no state yet"
	if state != nil {
		seen = "state " + state.State
	}
	if !conditions.IsFalse(obj, workspacesv1.HelmReleaseReadyCondition) {
		conditions.MarkFalse(obj, workspacesv1.HelmReleaseReadyCondition, workspacesv1.HelmReleaseNotReadyReason,
			"waiting for release %s to be deployed", name)
	}
	since := conditions.GetLastTransitionTime(obj, workspacesv1.HelmReleaseReadyCondition)
	timeout := deployTimeout(w.class)
	if since != nil && time.Since(since.Time) > timeout {
		msg := fmt.Sprintf("release %s was not deployed within %s (%s)", name, timeout, seen)
		conditions.MarkFalse(obj, workspacesv1.HelmReleaseReadyCondition, workspacesv1.DeployTimeoutReason, "%s", msg)
		r.fail(ctx, obj, workspacesv1.DeployTimeoutReason, msg)
		return stopWith(0), nil
	}
	obj.Status.Phase = workspacesv1.PhaseDeploying
	obj.Status.Message = deployingMessage(name, w.cdKey.Name)
	if state != nil && state.State != k0rdentv1beta1.ServiceStateProvisioning && state.State != k0rdentv1beta1.ServiceStatePending {
		obj.Status.Message += " (" + seen + ")"
	}
	wait := timeout
	if since != nil {
		wait = time.Until(since.Add(timeout)) + time.Second
	}
	return stopWith(wait), nil
}

// deployingMessage says that a release is on its way. It is the same from
// the apply until k0rdent reports the release deployed (no state yet, or
// Provisioning), so that the progress in between, which the ServiceSet
// shows, costs no status write.
func deployingMessage(release, cluster string) string {
	return fmt.Sprintf("waiting for release %s on cluster %q to be deployed", release, cluster)
}

// ensureChildNamespace prepares ws-<name> on the child before the release
// lands in it, with the workspace's labels and the mesh's enrolment labels,
// and brings the labels of an existing one up to date (mesh labels of
// another mode or of waypoints turned off are removed; other labels are
// left alone). A namespace that belongs to another workspace is refused;
// one that is still terminating is waited for. With refresh (the release
// is delivered already, only the labels changed), the child being out of
// reach does not hold the workspace up: it is tried again later.
//
// A namespace this manager has not seen yet is created first and read only
// when it exists already, so a new workspace costs the child one request;
// one it has seen is read first, as it is there nearly always.
func (r *Reconciler) ensureChildNamespace(ctx context.Context, w *workspaceRun, refresh bool, digest string) (stepResult, error) {
	obj := w.obj
	name := childNamespace(obj.Name)
	later := func(d time.Duration, format string, args ...any) (stepResult, error) {
		if refresh {
			log.FromContext(ctx).V(1).Info("relabelling the workspace's namespace later", "namespace", name, "reason", fmt.Sprintf(format, args...))
			w.retry = sooner(w.retry, d)
			return proceed, nil
		}
		pending(obj, format, args...)
		return stopWith(d), nil
	}
	c, err := r.Children.Client(ctx, w.cdKey)
	if err != nil {
		w.waitFor(clusterTopic(waitChild, w.cdKey))
		return later(30*time.Second, "waiting for access to the child cluster: %s", err)
	}
	want := r.childNamespaceLabels(w)
	enrolled := func() (stepResult, error) {
		r.enrolled.Store(obj.UID, enrolment{labels: labelsDigest(want), digest: digest})
		return proceed, nil
	}
	// create reports whether it created the namespace; one that exists
	// already is no error.
	create := func() (bool, error) {
		err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: want}})
		switch {
		case apierrors.IsAlreadyExists(err):
			return false, nil
		case err != nil:
			return false, fmt.Errorf("creating namespace %s on %s: %w", name, w.cdKey, err)
		}
		return true, nil
	}
	if _, seen := r.enrolled.Load(obj.UID); !seen && !refresh {
		switch created, err := create(); {
		case err != nil:
			return stopWith(0), err
		case created:
			return enrolled()
		}
	}
	ns := &corev1.Namespace{}
	err = c.Get(ctx, client.ObjectKey{Name: name}, ns)
	switch {
	case apierrors.IsNotFound(err):
		if _, err := create(); err != nil {
			return stopWith(0), err
		}
		return enrolled()
	case err != nil:
		return later(30*time.Second, "waiting for access to the child cluster: %s", err)
	case !ns.DeletionTimestamp.IsZero():
		return later(5*time.Second, "Waiting for workspace namespace %q on the child cluster to finish terminating", name)
	}
	owner, labelled := ns.Labels[plan.WorkspaceOwnerNamespaceLabel]
	switch {
	case labelled && owner != obj.Namespace:
		msg := fmt.Sprintf("namespace %q on the child cluster belongs to a workspace in namespace %q", name, owner)
		conditions.MarkFalse(obj, workspacesv1.ClusterDeploymentResolvedCondition, workspacesv1.NamespaceConflictReason, "%s", msg)
		r.fail(ctx, obj, workspacesv1.NamespaceConflictReason, msg)
		return stopWith(0), nil
	}
	// A namespace the exalsius operator created for this workspace is
	// adopted: it gets Apiary's labels too.
	if labels, changed := mesh.Relabel(ns.Labels, want); changed {
		patch := client.MergeFrom(ns.DeepCopy())
		ns.Labels = labels
		if err := c.Patch(ctx, ns, patch); err != nil {
			if refresh {
				return later(30*time.Second, "labelling namespace %s on %s: %s", name, w.cdKey, err)
			}
			return stopWith(0), fmt.Errorf("labelling namespace %s on %s: %w", name, w.cdKey, err)
		}
	}
	return enrolled()
}

// childNamespaceLabels are the labels of the workspace's namespace on its
// child: the workspace's, and the mesh's for its cluster.
func (r *Reconciler) childNamespaceLabels(w *workspaceRun) map[string]string {
	labels := namespaceLabels(w.obj)
	for k, v := range r.Mesh.ChildLabels(w.cdKey.Name) {
		labels[k] = v
	}
	return labels
}

// enrolment is what this manager last made sure of for a workspace's child
// namespace: that it exists with the labels of labelsDigest, for the
// workspace's objects of digest.
type enrolment struct{ labels, digest string }

// isEnrolled reports whether the workspace's child namespace was given its
// current labels by this manager for the objects of digest. A namespace is
// made sure of again when they change: at start, when the mesh
// configuration changed, and when the workspace's objects do (someone may
// have deleted the namespace in between).
func (r *Reconciler) isEnrolled(w *workspaceRun, digest string) bool {
	v, ok := r.enrolled.Load(w.obj.UID)
	return ok && v.(enrolment) == enrolment{labels: labelsDigest(r.childNamespaceLabels(w)), digest: digest}
}

// labelsDigest identifies a set of labels.
func labelsDigest(labels map[string]string) string {
	keys := slices.Sorted(maps.Keys(labels))
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=" + labels[k] + "\n")
	}
	return b.String()
}

func namespaceLabels(obj *workspacesv1.WorkspaceDeployment) map[string]string {
	return map[string]string{
		plan.WorkspaceLabel:               obj.Name,
		plan.WorkspaceOwnerNamespaceLabel: naming.LabelValue(obj.Namespace),
		plan.ManagedByLabel:               "apiary",
	}
}

func shortDigest(d string) string {
	if len(d) > 19 {
		return d[:19]
	}
	return d
}
