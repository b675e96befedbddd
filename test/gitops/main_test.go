// Package gitops_test runs Apiary in Git mode end to end: a loopback Git
// server, Flux's real source-controller and kustomize-controller (v1.9.6),
// the k0rdent stand-in with a child control plane, and Apiary committing
// what it renders, then reading the sync and the k0rdent state back.
package gitops_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/apiaryhq/apiary/internal/manager"
	"github.com/apiaryhq/apiary/internal/secrets/sopsenc"
	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/test/managertest"
	"github.com/apiaryhq/apiary/test/standin"
	"github.com/apiaryhq/apiary/test/world"
)

const (
	repoName = "fleet.git"
	branch   = "main"
	// apiaryPath is the folder of the repository Apiary owns.
	apiaryPath = "clusters/mgmt/apiary"
	fluxNS     = "flux-system"
	// fluxName names both the GitRepository and the Kustomization.
	fluxName = "apiary"
	timeout  = 2 * time.Minute
	// gitUser and gitPassword are the credentials the Git server accepts
	// (until a test rotates the password), kept in credentialsSecret, which
	// the GitRepository names and Apiary reuses.
	gitUser           = "apiary"
	gitPassword       = "first-password"
	credentialsSecret = "git-credentials"
	// signingSecret holds the SSH key that signs Apiary's commits.
	signingSecret = "git-signing"
	// authorEmail is the email of Apiary's commits, the principal of
	// their signatures.
	authorEmail = "apiary@gitops.test"
	// prerequisiteGrace is the manager's --prerequisite-grace-period.
	prerequisiteGrace = 3 * time.Second
)

var (
	env, child, regional *testenv.Environment
	// regionalClient reaches the regional control plane, with the Gateway
	// API's types.
	regionalClient client.Client
	flux           *testenv.Flux
	gitServer      *testenv.GitServer
	// signingPublicKey verifies Apiary's commits (authorized_keys format).
	signingPublicKey string
	// apiary runs the manager; tests may stop and start it again.
	apiary *world.InProcess
)

// regionalAnnotation on a ClusterDeployment makes the stand-in write a
// kubeconfig of the regional control plane.
const regionalAnnotation = world.RegionalAnnotation

func TestMain(m *testing.M) {
	identity, recipient, err := sopsenc.GenerateAgeKey()
	if err != nil {
		fmt.Fprintf(os.Stderr, "generating an age key: %v\n", err)
		os.Exit(1)
	}
	world.Main(m, world.World{Name: "gitops", Short: true, Management: true, Child: true, Regional: true,
		TenantGateway: &testenv.TenantGateway{Key: gateway, Domain: tenantDomain, Pool: map[string]int32{"ssh-0": 30022}},
		Git: &world.Git{Options: []testenv.GitServerOption{testenv.WithGitBasicAuth(gitUser, gitPassword)},
			Repos: []world.Repo{{Name: repoName, Branch: branch}}},
		FluxControllers: &testenv.FluxOptions{Namespace: fluxNS},
		StandIn:         standin.InWorld(),
		Manager: managertest.InProcess(manager.Options{
			NoCrossNamespaceRefs: true,
			// Unused prerequisites go (TestPrerequisiteRemovedThroughGit).
			PrerequisiteGracePeriod: prerequisiteGrace,
			Git: &manager.GitOptions{
				Path:                apiaryPath,
				GitRepositoryRef:    &types.NamespacedName{Namespace: fluxNS, Name: fluxName},
				KustomizationRef:    &types.NamespacedName{Namespace: fluxNS, Name: fluxName},
				SigningKeySecretRef: &types.NamespacedName{Namespace: fluxNS, Name: signingSecret},
				AuthorEmail:         authorEmail,
				CommitWindow:        500 * time.Millisecond,
				AgeRecipients:       []string{recipient},
			},
		}),
	}, func(r *world.Running) error {
		env, child, regional, regionalClient = r.Management, r.Child, r.Regional, r.RegionalClient
		gitServer, flux, apiary = r.Git, r.Flux, r.Manager
		if err := installFluxObjects(r.Context(), identity); err != nil {
			return fmt.Errorf("creating Flux's objects: %w", err)
		}
		var err error
		if signingPublicKey, err = installSigningKey(r.Context()); err != nil {
			return fmt.Errorf("creating the signing key: %w", err)
		}
		r.AtEnd(func(code int) int {
			if code != 0 {
				fmt.Fprintln(os.Stderr, "Flux logs:\n"+flux.Logs(80))
			}
			return code
		})
		return nil
	})
}

// installFluxObjects creates the GitRepository and the Kustomization (with
// SOPS decryption and prune) that apply Apiary's path, and the age key.
func installFluxObjects(ctx context.Context, identity string) error {
	c := env.Client
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fluxNS}}); err != nil {
		return err
	}
	for _, secret := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Namespace: fluxNS, Name: "sops-age"}, StringData: map[string]string{"identity.agekey": identity}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: fluxNS, Name: credentialsSecret}, StringData: map[string]string{"username": gitUser, "password": gitPassword}},
	} {
		if err := c.Create(ctx, secret); err != nil {
			return err
		}
	}
	objs, err := testenv.FluxSync{Namespace: fluxNS, Name: fluxName, URL: gitServer.RepoURL(repoName), Branch: branch,
		Path: apiaryPath, DecryptionSecret: "sops-age", SecretRef: credentialsSecret}.Objects()
	if err != nil {
		return err
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil {
			return fmt.Errorf("creating %s %s: %w", o.GetKind(), o.GetName(), err)
		}
	}
	return nil
}

// installSigningKey creates the Secret with the SSH key that signs
// Apiary's commits and returns its public key.
func installSigningKey(ctx context.Context) (string, error) {
	private, public, err := testenv.SSHKey()
	if err != nil {
		return "", err
	}
	return public, env.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: fluxNS, Name: signingSecret},
		Data:       map[string][]byte{"identity": private},
	})
}
