package delivery

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/apiaryhq/apiary/internal/delivery/flux"
)

// Labels and annotation kustomize-controller puts on and reads from the
// objects it applies.
const (
	fluxNameLabel       = "kustomize.toolkit.fluxcd.io/name"
	fluxNamespaceLabel  = "kustomize.toolkit.fluxcd.io/namespace"
	fluxPruneAnnotation = "kustomize.toolkit.fluxcd.io/prune"
)

// pruneForgotten deletes a live object whose file the sink removed when
// Flux applied that removal and will never prune the object, and reports
// whether it asked for the deletion. kustomize-controller prunes what the
// inventory in its Kustomization's status holds and the new revision does
// not; a reconcile that starts from a copy of the Kustomization one status
// write behind (two revisions in quick succession) records an inventory
// without the objects the revision in between created, and nothing prunes
// them afterwards. The sink deletes such an object only when all of these
// hold: the Kustomization prunes (spec.prune), has applied the owner's
// removal commit, and its inventory lacks the object; the object carries
// that Kustomization's labels and no prune-disabled annotation, and is not
// being deleted yet. The deletion is preconditioned on the object's UID.
func (g *Git) pruneForgotten(ctx context.Context, owner Owner, id string, live client.Object) (bool, error) {
	ks, c := g.opts.Flux.Kustomization, g.opts.Flux.Client
	if ks == nil || c == nil || !live.GetDeletionTimestamp().IsZero() {
		return false, nil
	}
	labels := live.GetLabels()
	if labels[fluxNameLabel] != ks.Name || labels[fluxNamespaceLabel] != ks.Namespace ||
		live.GetAnnotations()[fluxPruneAnnotation] == "disabled" {
		return false, nil
	}
	g.mu.Lock()
	rev := g.ownerRev[keyOf(owner)]
	g.mu.Unlock()
	if rev == "" {
		return false, nil // no removal commit known to this process
	}
	kustomization := &unstructured.Unstructured{}
	kustomization.SetGroupVersionKind(flux.KustomizationGVK)
	if err := g.opts.Reader.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: ks.Name}, kustomization); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	if prune, _, _ := unstructured.NestedBool(kustomization.Object, "spec", "prune"); !prune {
		return false, nil
	}
	entries, _, _ := unstructured.NestedSlice(kustomization.Object, "status", "inventory", "entries")
	for _, e := range entries {
		if m, ok := e.(map[string]any); ok && m["id"] == id {
			return false, nil // Flux still tracks it and will prune it
		}
	}
	st, err := g.syncState(ctx, kustomization, rev)
	if err != nil || !st.Synced {
		return false, err
	}
	uid := live.GetUID()
	switch err := c.Delete(ctx, live, client.Preconditions{UID: &uid}); {
	case err == nil, apierrors.IsNotFound(err):
	case apierrors.IsForbidden(err):
		// Not a kind Apiary may delete: it waits for Flux, as before.
		g.opts.Logger.Info("Flux applied the removal of an object but no longer tracks it, and Apiary may not delete it",
			"object", id, "kustomization", ks.String(), "error", err.Error())
		return false, nil
	default:
		return false, fmt.Errorf("deleting %s, which Flux %s applied the removal of without pruning it: %w", id, ks, err)
	}
	g.opts.Logger.Info("deleted an object Flux applied the removal of but no longer tracks",
		"object", id, "kustomization", ks.String(), "revision", st.Applied)
	return true, nil
}
