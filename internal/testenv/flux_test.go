package testenv

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const configMapYAML = `apiVersion: v1
kind: ConfigMap
metadata:
  name: %s
data:
  from: git
`

func kustomizationYAML(resources ...string) []byte {
	out := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:"
	if len(resources) == 0 {
		return []byte(out + " []\n")
	}
	for _, r := range resources {
		out += "\n- " + r
	}
	return []byte(out + "\n")
}

func configMapFile(name string) []byte {
	return []byte(fmt.Sprintf(configMapYAML, name))
}

// fluxField reads the string at path of the current obj.
func fluxField(g Gomega, c client.Client, obj *unstructured.Unstructured, path ...string) string {
	cur := obj.DeepCopy()
	g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(obj), cur)).To(Succeed())
	v, _, _ := unstructured.NestedString(cur.Object, path...)
	return v
}

// readyStatus returns the status of obj's Ready condition, "" when absent.
func readyStatus(g Gomega, c client.Client, obj *unstructured.Unstructured) string {
	cur := obj.DeepCopy()
	g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(obj), cur)).To(Succeed())
	conds, _, _ := unstructured.NestedSlice(cur.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}

// TestFluxAppliesAndPrunesFromGit runs real Flux against a control plane of
// its own and a loopback Git server: a pushed commit is applied, a commit
// that deletes a manifest prunes the object, and after the Git server was
// down and back a further commit is applied.
func TestFluxAppliesAndPrunesFromGit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane and Flux")
	}
	g := NewWithT(t)
	ctx := context.Background()
	crds, err := FluxCRDDirs()
	g.Expect(err).NotTo(HaveOccurred())
	env, err := Start(Bare(), WithCRDDirs(crds...))
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })

	start := time.Now()
	flux, err := StartFlux(ctx, env, FluxOptions{Dir: t.TempDir()})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { g.Expect(flux.Stop()).To(Succeed()) })
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(flux.Logs(16 << 10))
		}
	})
	t.Logf("Flux ready after %s", time.Since(start))

	git, err := StartGitServer(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = git.Stop() })
	g.Expect(git.InitRepo("fleet.git", "main")).To(Succeed())
	sha, err := git.Commit("fleet.git", "main", "greeting", map[string][]byte{
		"kustomization.yaml": kustomizationYAML("greeting.yaml"),
		"greeting.yaml":      configMapFile("greeting"),
	})
	g.Expect(err).NotTo(HaveOccurred())

	ns := env.NewNamespace(t, "flux")
	repo := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1",
		"kind":       "GitRepository",
		"metadata":   map[string]any{"name": "fleet", "namespace": ns},
		"spec": map[string]any{
			"url":      git.RepoURL("fleet.git"),
			"interval": "1m",
			"ref":      map[string]any{"branch": "main"},
		},
	}}
	ks := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1",
		"kind":       "Kustomization",
		"metadata":   map[string]any{"name": "fleet", "namespace": ns},
		"spec": map[string]any{
			"interval":        "1m",
			"path":            "./",
			"prune":           true,
			"targetNamespace": ns,
			"sourceRef":       map[string]any{"kind": "GitRepository", "name": "fleet"},
		},
	}}
	start = time.Now()
	g.Expect(env.Client.Create(ctx, repo)).To(Succeed())
	g.Expect(env.Client.Create(ctx, ks)).To(Succeed())

	cm := &corev1.ConfigMap{}
	g.Eventually(func() error {
		return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "greeting"}, cm)
	}, time.Minute, 200*time.Millisecond).Should(Succeed())
	g.Expect(cm.Data).To(HaveKeyWithValue("from", "git"))
	g.Eventually(func(g Gomega) string {
		return fluxField(g, env.Client, ks, "status", "lastAppliedRevision")
	}, time.Minute, 200*time.Millisecond).Should(Equal("main@sha1:" + sha))
	t.Logf("first commit applied after %s", time.Since(start))

	// A commit that deletes the manifest prunes the ConfigMap.
	sha, err = git.Commit("fleet.git", "main", "drop greeting", map[string][]byte{
		"kustomization.yaml": kustomizationYAML(),
		"greeting.yaml":      nil,
	})
	g.Expect(err).NotTo(HaveOccurred())
	start = time.Now()
	g.Expect(flux.RequestReconcile(ctx, env.Client, repo)).To(Succeed())
	g.Eventually(func() bool {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "greeting"}, &corev1.ConfigMap{})
		return apierrors.IsNotFound(err)
	}, time.Minute, 200*time.Millisecond).Should(BeTrue(), "the ConfigMap is pruned")
	g.Eventually(func(g Gomega) string {
		return fluxField(g, env.Client, ks, "status", "lastAppliedRevision")
	}, time.Minute, 200*time.Millisecond).Should(Equal("main@sha1:" + sha))
	t.Logf("pruning commit applied after %s", time.Since(start))

	// While the Git server is down the source is not ready; once it is back
	// at the same URL a new commit is applied.
	g.Expect(git.Stop()).To(Succeed())
	g.Expect(flux.RequestReconcile(ctx, env.Client, repo)).To(Succeed())
	g.Eventually(func(g Gomega) string {
		return readyStatus(g, env.Client, repo)
	}, time.Minute, 200*time.Millisecond).Should(Equal("False"))
	g.Expect(git.Start()).To(Succeed())
	sha, err = git.Commit("fleet.git", "main", "welcome back", map[string][]byte{
		"kustomization.yaml": kustomizationYAML("welcome.yaml"),
		"welcome.yaml":       configMapFile("welcome"),
	})
	g.Expect(err).NotTo(HaveOccurred())
	start = time.Now()
	g.Expect(flux.RequestReconcile(ctx, env.Client, repo)).To(Succeed())
	g.Eventually(func() error {
		return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "welcome"}, &corev1.ConfigMap{})
	}, time.Minute, 200*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) string {
		return fluxField(g, env.Client, ks, "status", "lastAppliedRevision")
	}, time.Minute, 200*time.Millisecond).Should(Equal("main@sha1:" + sha))
	g.Eventually(func(g Gomega) string {
		return readyStatus(g, env.Client, repo)
	}, time.Minute, 200*time.Millisecond).Should(Equal("True"))
	t.Logf("commit after the Git server's restart applied after %s", time.Since(start))
}

func TestStartFluxWithoutBinariesSaysHowToBuildThem(t *testing.T) {
	g := NewWithT(t)
	_, err := StartFlux(context.Background(), &Environment{}, FluxOptions{BinDir: t.TempDir()})
	g.Expect(err).To(MatchError(ContainSubstring("make flux-controllers")))
}
