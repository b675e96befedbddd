package delivery

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// KustomizationGVK is the kind of Flux object whose lastAppliedRevision
// tells whether a commit is applied.
var KustomizationGVK = schema.GroupVersionKind{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Kind: "Kustomization"}

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
	obj.SetGroupVersionKind(KustomizationGVK)
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
	applied := commitOf(st.Applied)
	g.mu.Lock()
	repo := g.repo
	g.mu.Unlock()
	if repo != nil && applied != "" {
		g.syncs.Applied(applied, func(sha string) (bool, error) { return repo.Contains(ctx, sha, applied) })
		ok, err := repo.Contains(ctx, revision, applied)
		if err != nil {
			return st, fmt.Errorf("comparing %s with the applied revision %s: %w", short(revision), short(applied), err)
		}
		st.Synced = ok
	}
	if st.Synced {
		st.Message = fmt.Sprintf("Flux Kustomization %s applied %s", ks, st.Applied)
		return st, nil
	}
	st.Message = fmt.Sprintf("waiting for Flux Kustomization %s to apply commit %s", ks, short(revision))
	if st.Applied != "" {
		st.Message += fmt.Sprintf(" (it applied %s)", st.Applied)
	}
	if msg := notReadyMessage(obj); msg != "" {
		st.Message += "; Flux reports: " + msg
	}
	return st, nil
}

// commitOf returns the commit SHA of a Flux revision such as
// "main@sha1:<sha>", "sha1:<sha>" or a bare SHA.
func commitOf(rev string) string {
	if i := strings.LastIndex(rev, ":"); i >= 0 {
		return rev[i+1:]
	}
	if i := strings.LastIndex(rev, "/"); i >= 0 { // legacy "main/<sha>"
		return rev[i+1:]
	}
	return rev
}

// notReadyMessage returns the message of a Ready=False condition.
func notReadyMessage(obj *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == "Ready" && m["status"] == "False" {
			msg, _ := m["message"].(string)
			return msg
		}
	}
	return ""
}

// short abbreviates a commit SHA for messages.
func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
