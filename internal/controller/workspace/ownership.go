package workspace

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/workspace/childns"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
	"github.com/apiaryhq/apiary/internal/workspace/scaledown"
)

// Ownership before every child-side action. A workspace's names are not
// unique: ws-<name> on the child and the release in it are the same for
// workspaces of one name in different namespaces (with cross-namespace
// references allowed, both may target one cluster), and the ServiceSet name
// joins cluster and workspace with "-" (a-b/c and a/b-c). So nothing is
// scaled, unpaused or deleted by its name alone: the object must carry the
// workspace's marks first (docs/security.md).

// scaleFunc is scaledown.Stop or scaledown.Start.
type scaleFunc func(ctx context.Context, c client.Client, namespace, release string) (scaledown.Result, error)

// scaleOwned runs scale on the workspace's release on its child when the
// child namespace is the workspace's. One that is another workspace's is
// not touched: a Warning (NotOwner) says so, and the result is empty, as
// for a namespace that does not exist.
func (r *Reconciler) scaleOwned(ctx context.Context, w *workspaceRun, cc client.Client, scale scaleFunc) (scaledown.Result, error) {
	obj := w.obj
	why, err := r.childForeign(ctx, cc, obj)
	if err != nil || why != "" {
		if why != "" && r.EventRecorder != nil {
			r.EventRecorder.Eventf(obj, nil, corev1.EventTypeWarning, workspacesv1.NotOwnerReason, "Scale",
				"the workloads in %s were not scaled: %s", childNamespace(obj.Name), why)
		}
		return scaledown.Result{}, err
	}
	return scale(ctx, cc, childNamespace(obj.Name), releaseName(obj))
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
	return ss, workspaceOwner(obj).Holds(ss), nil
}
