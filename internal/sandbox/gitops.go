package sandbox

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/apiaryhq/apiary/internal/delivery/flux"
	"github.com/apiaryhq/apiary/internal/manager"
	"github.com/apiaryhq/apiary/internal/secrets/sopsenc"
	"github.com/apiaryhq/apiary/internal/testenv"
)

// Names of the sandbox's Git delivery.
const (
	gitRepoName = "fleet.git"
	gitBranch   = "main"
	gitPath     = "clusters/sandbox/apiary"
	fluxNS      = "flux-system"
	fluxName    = "apiary"
)

// gitOps is the sandbox's Git delivery: a loopback Git server and Flux's
// source-controller and kustomize-controller applying Apiary's path.
type gitOps struct {
	server *testenv.GitServer
	flux   *testenv.Flux
	opts   *manager.GitOptions
}

// startGitOps starts the Git server, creates the repository, the age key and
// Flux's objects, and starts Flux on the management cluster.
func startGitOps(ctx context.Context, env *testenv.Environment, dir, fluxBin string, say func(string, ...any)) (*gitOps, error) {
	say("starting a loopback Git server and Flux (source-controller, kustomize-controller %s)", testenv.FluxVersion)
	server, err := testenv.StartGitServer(filepath.Join(dir, "git"))
	if err != nil {
		return nil, fmt.Errorf("starting the Git server: %w", err)
	}
	g := &gitOps{server: server}
	ok := false
	defer func() {
		if !ok {
			g.stop()
		}
	}()
	if err := server.InitRepo(gitRepoName, gitBranch); err != nil {
		return nil, err
	}
	if _, err := server.Commit(gitRepoName, gitBranch, "fleet: start", map[string][]byte{
		"README.md": []byte("A fleet repository; Apiary owns " + gitPath + ".\n"),
	}); err != nil {
		return nil, err
	}
	identity, recipient, err := sopsenc.GenerateAgeKey()
	if err != nil {
		return nil, err
	}
	objs, err := testenv.FluxSync{Namespace: fluxNS, Name: fluxName, URL: server.RepoURL(gitRepoName), Branch: gitBranch,
		Path: gitPath, DecryptionSecret: "sops-age"}.Objects()
	if err != nil {
		return nil, err
	}
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fluxNS}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: fluxNS, Name: "sops-age"},
			StringData: map[string]string{"identity.agekey": identity}},
		objs[0], objs[1],
	} {
		if err := env.Client.Create(ctx, o); err != nil {
			return nil, fmt.Errorf("creating %s: %w", o.GetName(), err)
		}
	}
	if g.flux, err = testenv.StartFlux(ctx, env, testenv.FluxOptions{BinDir: fluxBin, Namespace: fluxNS, Dir: filepath.Join(dir, "flux")}); err != nil {
		return nil, err
	}
	ref := &types.NamespacedName{Namespace: fluxNS, Name: fluxName}
	g.opts = &manager.GitOptions{
		Path: gitPath, GitRepositoryRef: ref, KustomizationRef: ref,
		CommitWindow: time.Second, CheckoutDir: filepath.Join(dir, "checkout"),
		AgeRecipients: []string{recipient},
	}
	say("Git delivery: Apiary commits to %s (branch %s, folder %s); Flux applies it, decrypting Secrets with an age key",
		server.RepoURL(gitRepoName), gitBranch, gitPath)
	ok = true
	return g, nil
}

// stop stops Flux, then the Git server.
func (g *gitOps) stop() {
	if g.flux != nil {
		_ = g.flux.Stop()
	}
	_ = g.server.Stop()
}

// fluxApplied returns the revision the sandbox's Kustomization last applied.
func fluxApplied(ctx context.Context, c client.Client) string {
	ks := &unstructured.Unstructured{}
	ks.SetGroupVersionKind(flux.KustomizationGVK)
	if err := c.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: fluxName}, ks); err != nil {
		return ""
	}
	rev, _, _ := unstructured.NestedString(ks.Object, "status", "lastAppliedRevision")
	return rev
}
