package delivery

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/apiaryhq/apiary/internal/delivery/flux"
)

// kustomization creates a Flux Kustomization with the status of one that
// applied revision and tracks inventory.
func kustomization(t *testing.T, ns, name string, prune bool, revision string, inventory ...string) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	k := &unstructured.Unstructured{}
	k.SetGroupVersionKind(flux.KustomizationGVK)
	k.SetNamespace(ns)
	k.SetName(name)
	_ = unstructured.SetNestedField(k.Object, map[string]any{
		"interval": "10m", "path": "./", "prune": prune,
		"sourceRef": map[string]any{"kind": "GitRepository", "name": "repo"},
	}, "spec")
	g.Expect(env.Client.Create(ctx, k)).To(Succeed())
	entries := []any{}
	for _, id := range inventory {
		entries = append(entries, map[string]any{"id": id, "v": "v1"})
	}
	_ = unstructured.SetNestedField(k.Object, map[string]any{
		"lastAppliedRevision": "main@sha1:" + revision,
		"inventory":           map[string]any{"entries": entries},
	}, "status")
	g.Expect(env.Client.Status().Update(ctx, k)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(flux.KustomizationGVK)
		g.Expect(mgr.GetClient().Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, got)).To(Succeed())
		applied, _, _ := unstructured.NestedString(got.Object, "status", "lastAppliedRevision")
		g.Expect(applied).To(HaveSuffix(revision))
	}).WithTimeout(10 * time.Second).Should(Succeed())
}

// TestGitDeletePrunesWhatFluxForgot: when Flux applied the commit that
// removed an object's file but no longer tracks the object (its inventory
// was written from a stale copy of the Kustomization), Delete removes the
// object itself; it leaves alone one Flux still tracks, one that opts out
// of pruning, and any object when the Kustomization does not prune.
func TestGitDeletePrunesWhatFluxForgot(t *testing.T) {
	skipWithoutEnv(t)
	tests := []struct {
		name       string
		prune      bool
		tracked    bool
		annotation string
		wantGone   bool
	}{
		{name: "forgotten", prune: true, wantGone: true},
		{name: "still tracked", prune: true, tracked: true},
		{name: "prune disabled on the object", prune: true, annotation: "disabled"},
		{name: "Kustomization without prune", prune: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			ns := env.NewNamespace(t, "git-forgot")
			srv := startGitServer(t)
			ks := types.NamespacedName{Namespace: ns, Name: "apiary"}
			s := startGit(t, srv, func(o *GitOptions) {
				o.Flux = FluxTarget{Kustomization: &ks, Client: env.Client}
			})
			owner := testOwner(ns, "colony")
			res := applyUntilCommitted(t, s, owner, func() []*unstructured.Unstructured {
				return []*unstructured.Unstructured{configMap(ns, "cm", map[string]string{"v": "1"})}
			}, nil)

			// Flux applied the object, with Apiary's labels from the file and its own.
			labels := owner.OwnerLabels()
			labels[fluxNameLabel], labels[fluxNamespaceLabel] = ks.Name, ks.Namespace
			applied := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm", Labels: labels}}
			if tt.annotation != "" {
				applied.Annotations = map[string]string{fluxPruneAnnotation: tt.annotation}
			}
			g.Expect(env.Client.Create(ctx, applied)).To(Succeed())
			waitCached(t, configMap(ns, "cm", nil))

			// The removal is committed; Flux applies that commit.
			g.Eventually(func() error {
				_, err := s.Delete(ctx, owner, res.Inventory)
				return err
			}).WithTimeout(20 * time.Second).Should(Succeed())
			g.Eventually(func() string { return remoteFile(t, srv, objPath(ns, "ConfigMap", "cm")) }).
				WithTimeout(20 * time.Second).Should(BeEmpty())
			head := history(t, srv)[0].Hash.String()
			inventory := []string{ns + "_other__ConfigMap"} // what the revision still holds
			if tt.tracked {
				inventory = append(inventory, ns+"_cm__ConfigMap")
			}
			kustomization(t, ns, ks.Name, tt.prune, head, inventory...)

			done, err := s.Delete(ctx, owner, res.Inventory)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(done).To(BeFalse(), "the object was still there when Delete looked")
			if tt.wantGone {
				g.Eventually(func() bool {
					return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(applied), &corev1.ConfigMap{}))
				}).WithTimeout(10*time.Second).Should(BeTrue(), "the object Flux forgot is deleted")
				g.Eventually(func() (bool, error) { return s.Delete(ctx, owner, res.Inventory) }).
					WithTimeout(10 * time.Second).Should(BeTrue())
				return
			}
			for range 3 {
				done, err := s.Delete(ctx, owner, res.Inventory)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(done).To(BeFalse())
			}
			err = env.Client.Get(ctx, client.ObjectKeyFromObject(applied), &corev1.ConfigMap{})
			g.Expect(err).NotTo(HaveOccurred(), "the object is left for Flux")
		})
	}
}

// TestGitOpenNudgesFlux: a sink that opens its clone asks Flux to fetch at
// once, for a commit a stopped manager pushed without asking.
func TestGitOpenNudgesFlux(t *testing.T) {
	skipWithoutEnv(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "git-nudge")
	repo := &unstructured.Unstructured{}
	repo.SetGroupVersionKind(gitRepositoryGVK)
	repo.SetNamespace(ns)
	repo.SetName("repo")
	_ = unstructured.SetNestedField(repo.Object, map[string]any{"interval": "10m", "url": "https://example.com/repo.git"}, "spec")
	g.Expect(env.Client.Create(ctx, repo)).To(Succeed())
	srv := startGitServer(t)
	key := types.NamespacedName{Namespace: ns, Name: "repo"}
	startGit(t, srv, func(o *GitOptions) { o.Flux = FluxTarget{GitRepository: &key, Client: env.Client} })
	g.Eventually(func(g Gomega) {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(gitRepositoryGVK)
		g.Expect(env.Client.Get(ctx, key, got)).To(Succeed())
		g.Expect(got.GetAnnotations()).To(HaveKey("reconcile.fluxcd.io/requestedAt"))
	}).WithTimeout(20 * time.Second).Should(Succeed())
}
