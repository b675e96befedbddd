package metrics_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	"github.com/apiaryhq/apiary/internal/manager"
	"github.com/apiaryhq/apiary/internal/metrics"
	"github.com/apiaryhq/apiary/internal/testenv"
)

// TestWhatAUserReadsInGitMode: a Colony committed through Git shows as a
// commit and a successful push of the repository (every other result at
// zero), and once the Flux Kustomization reports the commit applied (the
// test plays Flux), as one observation of the commit-to-sync latency.
func TestWhatAUserReadsInGitMode(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	const repoName, branch, path = "fleet", "main", "apiary"
	g.Expect(gitServer.InitRepo(repoName, branch)).To(Succeed())
	_, err := gitServer.Commit(repoName, branch, "fleet: start", map[string][]byte{"README.md": []byte("fleet\n")})
	g.Expect(err).NotTo(HaveOccurred())
	remote := gitServer.RepoURL(repoName)
	fluxNS := env.NewNamespace(t, "flux")
	objs, err := testenv.FluxSync{Namespace: fluxNS, Name: "apiary", URL: remote, Branch: branch, Path: path}.Objects()
	g.Expect(err).NotTo(HaveOccurred())
	for _, o := range objs {
		g.Expect(env.Client.Create(ctx, o)).To(Succeed())
	}
	url := apiary(t, manager.Options{Git: &manager.GitOptions{URL: remote, Branch: branch, Path: path,
		KustomizationRef: &types.NamespacedName{Namespace: fluxNS, Name: "apiary"},
		CommitWindow:     200 * time.Millisecond, CheckoutDir: t.TempDir()}})
	repo := metrics.RepositoryLabel(remote)

	eventually(t, url, func(g Gomega, f families) {
		for _, result := range metrics.PushResults {
			g.Expect(f.value("apiary_git_pushes_total", "repository", repo, "result", result)).To(Equal(0.0), result)
		}
		g.Expect(f.value("apiary_git_commits_total", "repository", repo)).To(Equal(0.0))
		g.Expect(f.value("apiary_git_push_retries_total", "repository", repo)).To(Equal(0.0))
		g.Expect(f.count("apiary_git_sync_latency_seconds", "repository", repo)).To(Equal(int64(0)))
	})

	ns := env.NewNamespace(t, "gitmetrics")
	fixtures(t, ns)
	col := colony(ns, "fleet", "c1")
	g.Expect(env.Client.Create(ctx, col)).To(Succeed()) // left behind: no Flux runs to prune it
	var revision string
	g.Eventually(func(g Gomega) {
		got := &infrav1.Colony{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(col), got)).To(Succeed())
		g.Expect(got.Status.Delivery).NotTo(BeNil())
		revision = got.Status.Delivery.Revision
		g.Expect(revision).NotTo(BeEmpty())
	}, timeout).Should(Succeed())
	var pushed float64
	eventually(t, url, func(g Gomega, f families) {
		pushed = f.value("apiary_git_pushes_total", "repository", repo, "result", metrics.PushSucceeded)
		g.Expect(pushed).To(BeNumerically(">=", 1))
		g.Expect(f.value("apiary_git_commits_total", "repository", repo)).To(Equal(pushed), "no commit was made again")
		g.Expect(f.value("apiary_git_pushes_total", "repository", repo, "result", metrics.PushUnreachable)).To(Equal(0.0))
		g.Expect(f.count("apiary_git_sync_latency_seconds", "repository", repo)).To(Equal(int64(0)), "Flux has applied nothing yet")
	})

	// Flux applies the commit.
	ks := objs[1]
	g.Expect(ks.GetKind()).To(Equal("Kustomization"))
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), ks)).To(Succeed())
	g.Expect(unstructured.SetNestedField(ks.Object, branch+"@sha1:"+revision, "status", "lastAppliedRevision")).To(Succeed())
	g.Expect(unstructured.SetNestedSlice(ks.Object, []any{map[string]any{"type": "Ready", "status": "True", "reason": "ReconciliationSucceeded",
		"message": "Applied revision: " + branch + "@sha1:" + revision, "lastTransitionTime": metav1.Now().UTC().Format(time.RFC3339)}},
		"status", "conditions")).To(Succeed())
	g.Expect(env.Client.Status().Update(ctx, ks)).To(Succeed())
	eventually(t, url, func(g Gomega, f families) {
		g.Expect(f.count("apiary_git_sync_latency_seconds", "repository", repo)).To(Equal(int64(pushed)), "each pushed commit, once")
		s := f.series("apiary_git_sync_latency_seconds", "repository", repo)[0].GetHistogram()
		g.Expect(s.GetSampleSum()).To(BeNumerically(">", 0))
		g.Expect(s.GetSampleSum()).To(BeNumerically("<", timeout.Seconds()*float64(pushed)))
	})
}
