package delivery

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/apiaryhq/apiary/internal/delivery/flux"
)

// SyncState is what Flux has done with a commit of the sink.
type SyncState struct {
	// Known is false when no Flux Kustomization is configured, so the sink
	// cannot tell.
	Known bool
	// Synced is true once the Kustomization applied the commit or a later one.
	Synced bool
	// Applied is the revision the Kustomization last applied.
	Applied string
	// Message says what Flux reports, for conditions.
	Message string
}

// Synced reports whether the Flux Kustomization that applies the sink's path
// has applied revision (a commit SHA) or a commit that contains it. It
// reads the Kustomization through reader, normally the manager's
// cache, which controllers watch.
func (g *Git) Synced(ctx context.Context, reader client.Reader, _ Owner, revision string) (SyncState, error) {
	ks := g.opts.Flux.Kustomization
	if ks == nil {
		return SyncState{Message: "no Flux Kustomization is configured for Git delivery"}, nil
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(flux.KustomizationGVK)
	if err := reader.Get(ctx, client.ObjectKey{Namespace: ks.Namespace, Name: ks.Name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return SyncState{Known: true, Message: fmt.Sprintf("Flux Kustomization %s not found", ks)}, nil
		}
		return SyncState{Known: true}, fmt.Errorf("reading Flux Kustomization %s: %w", ks, err)
	}
	return g.syncState(ctx, obj, revision)
}

// syncState reports whether the Kustomization obj (the sink's, read by the
// caller) has applied revision.
func (g *Git) syncState(ctx context.Context, obj *unstructured.Unstructured, revision string) (SyncState, error) {
	ks := client.ObjectKeyFromObject(obj)
	st := SyncState{Known: true}
	st.Applied, _, _ = unstructured.NestedString(obj.Object, "status", "lastAppliedRevision")
	applied := flux.CommitOf(st.Applied)
	g.mu.Lock()
	repo := g.repo
	g.mu.Unlock()
	if repo != nil && applied != "" {
		g.syncs.Applied(applied, func(sha string) (bool, error) { return repo.Contains(ctx, sha, applied) })
		ok, err := repo.Contains(ctx, revision, applied)
		if err != nil {
			return st, fmt.Errorf("comparing %s with the applied revision %s: %w", flux.Short(revision), flux.Short(applied), err)
		}
		st.Synced = ok
	}
	if st.Synced {
		st.Message = fmt.Sprintf("Flux Kustomization %s applied %s", ks, st.Applied)
		return st, nil
	}
	st.Message = fmt.Sprintf("waiting for Flux Kustomization %s to apply commit %s", ks, flux.Short(revision))
	if st.Applied != "" {
		st.Message += fmt.Sprintf(" (it applied %s)", st.Applied)
	}
	if msg := flux.NotReadyMessage(obj); msg != "" {
		st.Message += "; Flux reports: " + msg
	}
	return st, nil
}
