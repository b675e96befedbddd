package workspace

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/workspace/childns"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
	"github.com/apiaryhq/apiary/internal/workspace/request"
	"github.com/apiaryhq/apiary/internal/workspace/scaledown"
)

// Ownership before every child-side action. A workspace's names are not
// unique: ws-<name> on the child and the release in it are the same for
// workspaces of one name in different namespaces (with cross-namespace
// references allowed, both may target one cluster), and the ServiceSet name
// joins cluster and workspace with "-" (a-b/c and a/b-c). So nothing is
// scaled, unpaused or deleted by its name alone: the object must carry the
// workspace's marks first (docs/security.md).

// stopWorkloads scales the workspace's release on its child to zero when
// the child namespace is the workspace's (foreignChild). The counts are
// recorded on the workspace's status, where a tenant cannot write, and
// written before the first scale (scaledown.Plan), so that a crash between
// the writes loses none.
func (r *Reconciler) stopWorkloads(ctx context.Context, w *workspaceRun, cc client.Client) (scaledown.Result, error) {
	obj := w.obj
	if foreign, err := r.foreignChild(ctx, w, cc); err != nil || foreign {
		return scaledown.Result{}, err
	}
	ns, release := childNamespace(obj.Name), releaseName(obj)
	rec := recordOf(lifecycleStatus(obj).StoppedWorkloads)
	planned, err := scaledown.Plan(ctx, cc, ns, release, rec)
	if err != nil {
		return scaledown.Result{}, err
	}
	if len(planned) > len(rec) {
		l := lifecycleStatus(obj)
		l.StoppedWorkloads = workloadsOf(planned)
		err := w.persist(ctx)
		// The write may replace the status: the caller's pointer to the
		// lifecycle status stays the one it holds, with what was written.
		if fresh := obj.Status.Lifecycle; fresh != nil && fresh != l {
			*l = *fresh
		}
		obj.Status.Lifecycle = l
		if err != nil {
			return scaledown.Result{}, fmt.Errorf("recording the workloads' replicas: %w", err)
		}
	}
	res, err := scaledown.Stop(ctx, cc, ns, release, planned)
	lifecycleStatus(obj).StoppedWorkloads = workloadsOf(res.Record)
	return res, err
}

// startWorkloads gives the workspace's release on its child the counts
// recorded when it stopped, never more than its admitted replicas, when the
// child namespace is the workspace's; the record is then dropped.
func (r *Reconciler) startWorkloads(ctx context.Context, w *workspaceRun, cc client.Client) (scaledown.Result, error) {
	obj := w.obj
	if foreign, err := r.foreignChild(ctx, w, cc); err != nil || foreign {
		return scaledown.Result{}, err
	}
	l := lifecycleStatus(obj)
	res, err := scaledown.Start(ctx, cc, childNamespace(obj.Name), releaseName(obj), recordOf(l.StoppedWorkloads), admittedReplicas(w))
	if err != nil {
		return res, err
	}
	for _, warning := range res.Warnings {
		log.FromContext(ctx).Info("restoring a workload's replicas", "warning", warning)
	}
	l.StoppedWorkloads = nil
	return res, nil
}

// admittedReplicas bounds what a start restores of each controller: the
// replicas the gate admitted, else those the workspace resolved to.
func admittedReplicas(w *workspaceRun) int64 {
	if a := w.obj.Status.Admission; a != nil && a.Replicas > 0 {
		return int64(a.Replicas)
	}
	return request.Of(w.resolved).Replicas
}

// recordOf and workloadsOf convert between the status's list and
// scaledown's Record (keyed Kind/name).
func recordOf(ws []workspacesv1.StoppedWorkload) scaledown.Record {
	rec := make(scaledown.Record, len(ws))
	for _, s := range ws {
		rec[s.Kind+"/"+s.Name] = int64(s.Replicas)
	}
	return rec
}

func workloadsOf(rec scaledown.Record) []workspacesv1.StoppedWorkload {
	out := make([]workspacesv1.StoppedWorkload, 0, len(rec))
	for _, key := range slices.Sorted(maps.Keys(rec)) {
		kind, name, _ := strings.Cut(key, "/")
		out = append(out, workspacesv1.StoppedWorkload{Kind: kind, Name: name, Replicas: int32(min(rec[key], scaledown.MaxSavedReplicas))})
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// foreignChild reports whether the workspace's child namespace is another
// workspace's (childForeign), with a Warning (NotOwner) when it is.
func (r *Reconciler) foreignChild(ctx context.Context, w *workspaceRun, cc client.Client) (bool, error) {
	obj := w.obj
	why, err := r.childForeign(ctx, cc, obj)
	if err != nil || why == "" {
		return false, err
	}
	if r.EventRecorder != nil {
		r.EventRecorder.Eventf(obj, nil, corev1.EventTypeWarning, workspacesv1.NotOwnerReason, "Scale",
			"the workloads in %s were not scaled: %s", childNamespace(obj.Name), why)
	}
	return true, nil
}

// childForeign says why the workspace's namespace on the child is not the
// workspace's to act on, "" when it is or does not exist. A namespace the
// exalsius operator made (its mark names no namespace) is the workspace's
// when the workspace's ServiceSet is: that one names the workspace by UID.
func (r *Reconciler) childForeign(ctx context.Context, cc client.Client, obj *workspacesv1.WorkspaceDeployment) (string, error) {
	name := childNamespace(obj.Name)
	ns := &corev1.Namespace{}
	if err := cc.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		return "", fmt.Errorf("reading namespace %s on the child cluster: %w", name, err)
	}
	why, unnamed := childns.Foreign(ns, obj)
	if why != "" || !unnamed {
		return why, nil
	}
	_, held, err := r.ownServiceSet(ctx, obj)
	switch {
	case err != nil:
		return "", err
	case !held:
		return fmt.Sprintf("namespace %q on the child cluster names no workspace namespace, and ServiceSet %s is not this workspace's",
			name, serviceSetName(obj)), nil
	}
	return "", nil
}

// ownServiceSet reads the workspace's ServiceSet by its name and reports
// whether it is the workspace's (its owner labels, or, unlabelled, an
// ownerReference to its UID). A missing one is nil and not held.
func (r *Reconciler) ownServiceSet(ctx context.Context, obj *workspacesv1.WorkspaceDeployment) (*k0rdentv1beta1.ServiceSet, bool, error) {
	ss := &k0rdentv1beta1.ServiceSet{}
	key := client.ObjectKey{Namespace: plan.ClusterKey(obj).Namespace, Name: serviceSetName(obj)}
	if err := r.Get(ctx, key, ss); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("reading ServiceSet %s: %w", key, err)
	}
	return ss, r.owner(obj).Holds(ss), nil
}
