// Package childns keeps a workspace's namespace ws-<name> on its child
// cluster: created before the release lands in it, labelled with the
// workspace's labels and the mesh's enrolment labels, refused when it
// belongs to another workspace, and deleted with the workspace. It
// remembers which namespaces it made sure of, so that a steady workspace
// costs the child no request.
package childns

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/childcluster"
	"github.com/apiaryhq/apiary/internal/mesh"
	"github.com/apiaryhq/apiary/internal/naming"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
)

// Namespaces keeps workspaces' child namespaces. Set Children and Mesh
// before the first call; it is safe for concurrent use.
type Namespaces struct {
	Children *childcluster.Manager
	// Mesh adds its enrolment labels for the workspace's cluster.
	Mesh mesh.Config

	// enrolled remembers, by workspace UID, the labels last given to the
	// workspace's child namespace and the objects' digest they were given
	// for.
	enrolled sync.Map
}

// Outcome is what Ensure found when the namespace is not ready.
type Outcome struct {
	// Ready: the namespace exists with the workspace's labels.
	Ready bool
	// Unreachable: the child cluster could not be reached; look again after Retry.
	Unreachable bool
	// Retry is when to look again at a namespace that is not ready.
	Retry time.Duration
	// Message says why it is not ready.
	Message string
	// Conflict: the namespace belongs to another workspace; Message says whose.
	Conflict bool
}

func wait(d time.Duration, unreachable bool, format string, args ...any) Outcome {
	return Outcome{Retry: d, Unreachable: unreachable, Message: fmt.Sprintf(format, args...)}
}

// Ensure prepares ws-<name> on the child before the release lands in it
// and brings the labels of an existing one up to date (mesh labels of
// another mode or of waypoints turned off are removed; other labels are
// left alone). A namespace of another workspace is a conflict; one that is
// still terminating is waited for. A namespace this manager has not seen
// yet is created first and read only when it exists already, so a new
// workspace costs the child one request; one it has seen is read first,
// as it is there nearly always, and so is one whose workspace's objects are
// delivered already (createFirst false). digest names the workspace's
// objects.
func (n *Namespaces) Ensure(ctx context.Context, obj *workspacesv1.WorkspaceDeployment, cd types.NamespacedName, digest string,
	createFirst bool) (Outcome, error) {
	name := plan.ChildNamespace(obj.Name)
	c, err := n.Children.Client(ctx, cd)
	if err != nil {
		return wait(30*time.Second, true, "waiting for access to the child cluster: %s", err), nil
	}
	want := n.labels(obj, cd)
	enrolled := func() (Outcome, error) {
		n.enrolled.Store(obj.UID, enrolment{labels: labelsDigest(want), digest: digest})
		return Outcome{Ready: true}, nil
	}
	// create reports whether it created the namespace; one that exists
	// already is no error.
	create := func() (bool, error) {
		err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: want}})
		switch {
		case apierrors.IsAlreadyExists(err):
			return false, nil
		case err != nil:
			return false, fmt.Errorf("creating namespace %s on %s: %w", name, cd, err)
		}
		return true, nil
	}
	if _, seen := n.enrolled.Load(obj.UID); !seen && createFirst {
		switch created, err := create(); {
		case err != nil:
			return Outcome{}, err
		case created:
			return enrolled()
		}
	}
	ns := &corev1.Namespace{}
	err = c.Get(ctx, client.ObjectKey{Name: name}, ns)
	switch {
	case apierrors.IsNotFound(err):
		if _, err := create(); err != nil {
			return Outcome{}, err
		}
		return enrolled()
	case err != nil:
		return wait(30*time.Second, true, "waiting for access to the child cluster: %s", err), nil
	case !ns.DeletionTimestamp.IsZero():
		return wait(5*time.Second, false, "Waiting for workspace namespace %q on the child cluster to finish terminating", name), nil
	}
	if msg := notOurs(ns, obj); msg != "" {
		return Outcome{Conflict: true, Message: msg}, nil
	}
	// A namespace the exalsius operator created for this workspace is
	// adopted: it gets Apiary's labels too.
	if labels, changed := mesh.Relabel(ns.Labels, want); changed {
		patch := client.MergeFrom(ns.DeepCopy())
		ns.Labels = labels
		if err := c.Patch(ctx, ns, patch); err != nil {
			return Outcome{}, fmt.Errorf("labelling namespace %s on %s: %w", name, cd, err)
		}
	}
	return enrolled()
}

// Enrolled reports whether the workspace's child namespace was given its
// current labels by this manager for the objects of digest. A namespace is
// made sure of again when they change: at start, when the mesh
// configuration changed, and when the workspace's objects do (someone may
// have deleted the namespace in between).
func (n *Namespaces) Enrolled(obj *workspacesv1.WorkspaceDeployment, cd types.NamespacedName, digest string) bool {
	v, ok := n.enrolled.Load(obj.UID)
	return ok && v.(enrolment) == enrolment{labels: labelsDigest(n.labels(obj, cd)), digest: digest}
}

// Delete deletes the workspace's namespace from its child cluster, unless
// the namespace is not the workspace's.
func (n *Namespaces) Delete(ctx context.Context, obj *workspacesv1.WorkspaceDeployment, cd types.NamespacedName) error {
	c, err := n.Children.Client(ctx, cd)
	if err != nil {
		return fmt.Errorf("reaching cluster %s to delete the workspace's namespace: %w", cd, err)
	}
	name := plan.ChildNamespace(obj.Name)
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("reading namespace %s on %s: %w", name, cd, err)
	}
	if ns.Labels[plan.WorkspaceLabel] != obj.Name || ns.Labels[plan.WorkspaceOwnerNamespaceLabel] != naming.LabelValue(obj.Namespace) {
		return nil
	}
	if err := c.Delete(ctx, ns); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting namespace %s on %s: %w", ns.Name, cd, err)
	}
	return nil
}

// notOurs says why an existing namespace is not the workspace's, "" when
// it is. A workspace's namespace carries its mark, the label
// workspaces.exalsius.ai/workspace=<name>, which Apiary and the exalsius
// operator both set; Apiary's also names the workspace's namespace. An
// unmarked namespace is someone else's (a tenant's, another controller's):
// it is neither adopted nor relabelled nor, later, deleted.
func notOurs(ns *corev1.Namespace, obj *workspacesv1.WorkspaceDeployment) string {
	mark, marked := ns.Labels[plan.WorkspaceLabel]
	switch {
	case !marked:
		return fmt.Sprintf("namespace %q already exists on the child cluster without the label %s=%s of a workspace's namespace; "+
			"it is not adopted: delete it, or choose another workspace name", ns.Name, plan.WorkspaceLabel, obj.Name)
	case mark != obj.Name:
		return fmt.Sprintf("namespace %q on the child cluster belongs to workspace %q", ns.Name, mark)
	}
	if owner, labelled := ns.Labels[plan.WorkspaceOwnerNamespaceLabel]; labelled && owner != naming.LabelValue(obj.Namespace) {
		return fmt.Sprintf("namespace %q on the child cluster belongs to a workspace in namespace %q", ns.Name, owner)
	}
	return ""
}

// Foreign says why the existing namespace ns on the child is not the
// workspace's to act on (scale, unpause, delete what runs in it), "" when
// it is: it must carry the workspace's mark and name the workspace's
// namespace. An unadopted namespace of the exalsius operator names no
// namespace (its mark is the name alone); unnamed reports that, for the
// caller to decide by another of the workspace's marks.
func Foreign(ns *corev1.Namespace, obj *workspacesv1.WorkspaceDeployment) (why string, unnamed bool) {
	if msg := notOurs(ns, obj); msg != "" {
		return msg, false
	}
	_, labelled := ns.Labels[plan.WorkspaceOwnerNamespaceLabel]
	return "", !labelled
}

// Forget drops what is remembered of a workspace.
func (n *Namespaces) Forget(uid types.UID) { n.enrolled.Delete(uid) }

// labels are the labels of the workspace's namespace on its child: the
// workspace's, and the mesh's for its cluster.
func (n *Namespaces) labels(obj *workspacesv1.WorkspaceDeployment, cd types.NamespacedName) map[string]string {
	labels := plan.NamespaceLabels(obj)
	maps.Copy(labels, n.Mesh.ChildLabels(cd.Name))
	return labels
}

// enrolment is what this manager last made sure of for a workspace's child
// namespace: that it exists with the labels of labelsDigest, for the
// workspace's objects of digest.
type enrolment struct{ labels, digest string }

// labelsDigest identifies a set of labels.
func labelsDigest(labels map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		b.WriteString(k + "=" + labels[k] + "\n")
	}
	return b.String()
}
