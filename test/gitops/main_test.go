// Package gitops_test runs Apiary in Git mode end to end: a loopback Git
// server, Flux's real source-controller and kustomize-controller (v1.9.6),
// the k0rdent stand-in with a child control plane, and Apiary committing
// what it renders, then reading the sync and the k0rdent state back.
package gitops_test

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	"github.com/apiaryhq/apiary/internal/manager"
	"github.com/apiaryhq/apiary/internal/secrets/sopsenc"
	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/test/standin"
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
	apiary *apiaryProcess
)

// regionalAnnotation on a ClusterDeployment makes the stand-in write a
// kubeconfig of the regional control plane.
const regionalAnnotation = "test.apiary.dev/regional"

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	if testing.Short() {
		fmt.Println("skipping the Git delivery end-to-end tests in -short mode")
		return 0
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(logOutput())))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fail := func(what string, err error) int {
		fmt.Fprintf(os.Stderr, "%s: %v\n", what, err)
		return 1
	}
	pair, err := testenv.StartFluxPair()
	if err != nil {
		return fail("starting the control planes", err)
	}
	defer pair.Stop()
	env, child = pair.Management, pair.Child
	childKubeconfig := pair.ChildKubeconfig
	if regional, regionalClient, err = testenv.StartGatewayPlane(); err != nil {
		return fail("starting the regional control plane", err)
	}
	defer func() { _ = regional.Stop() }()
	regionalKubeconfig, err := regional.Kubeconfig()
	if err != nil {
		return fail("regional kubeconfig", err)
	}
	si := &standin.StandIn{KubeconfigFor: func(cd *k0rdentv1beta1.ClusterDeployment) []byte {
		if cd.Annotations[regionalAnnotation] == "true" {
			return regionalKubeconfig
		}
		return childKubeconfig
	}}
	if _, _, err := standin.Run(ctx, env.Config, si); err != nil {
		return fail("starting the stand-in", err)
	}

	if gitServer, err = pair.StartGitServer(testenv.WithGitBasicAuth(gitUser, gitPassword)); err != nil {
		return fail("starting the Git server", err)
	}
	if err := gitServer.InitRepo(repoName, branch); err != nil {
		return fail("creating the repository", err)
	}
	if _, err := gitServer.Commit(repoName, branch, "fleet: start", map[string][]byte{"README.md": []byte("fleet\n")}); err != nil {
		return fail("first commit", err)
	}

	identity, recipient, err := sopsenc.GenerateAgeKey()
	if err != nil {
		return fail("generating an age key", err)
	}
	if err := installFluxObjects(ctx, identity); err != nil {
		return fail("creating Flux's objects", err)
	}
	if signingPublicKey, err = installSigningKey(ctx); err != nil {
		return fail("creating the signing key", err)
	}
	if err := (testenv.TenantGateway{Key: gateway, Domain: tenantDomain, Pool: map[string]int32{"ssh-0": 30022}}).Create(ctx, regionalClient); err != nil {
		return fail("creating the tenant Gateway", err)
	}
	if flux, err = testenv.StartFlux(ctx, env, testenv.FluxOptions{Namespace: fluxNS}); err != nil {
		return fail("starting Flux", err)
	}
	defer func() { _ = flux.Stop() }()

	apiary = &apiaryProcess{options: manager.Options{
		RestConfig:             env.Config,
		MetricsBindAddress:     "0",
		HealthProbeBindAddress: "0",
		Concurrency:            manager.DefaultConcurrency,
		CRDCheckInterval:       time.Second,
		NoCrossNamespaceRefs:   true,
		Logger:                 ctrl.Log.WithName("apiary"),
		// A test restarts the manager in this process.
		SkipControllerNameValidation: true,
		// Unused prerequisites go (TestPrerequisiteRemovedThroughGit).
		PrerequisiteGracePeriod: prerequisiteGrace,
		Git: &manager.GitOptions{
			Path:                apiaryPath,
			GitRepositoryRef:    &types.NamespacedName{Namespace: fluxNS, Name: fluxName},
			KustomizationRef:    &types.NamespacedName{Namespace: fluxNS, Name: fluxName},
			SigningKeySecretRef: &types.NamespacedName{Namespace: fluxNS, Name: signingSecret},
			AuthorEmail:         authorEmail,
			CommitWindow:        500 * time.Millisecond,
			CheckoutDir:         filepath.Join(pair.Dir(), "checkout"),
			AgeRecipients:       []string{recipient},
		},
	}}
	apiary.start(ctx)
	code := m.Run()
	if code != 0 {
		fmt.Fprintln(os.Stderr, "Flux logs:\n"+flux.Logs(80))
	}
	if err := apiary.stop(); err != nil {
		fmt.Fprintf(os.Stderr, "manager: %v\n", err)
	}
	cancel()
	return code
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

// apiaryProcess runs the manager in the background.
type apiaryProcess struct {
	options manager.Options
	cancel  context.CancelFunc
	done    chan error
}

// start runs the manager until stop.
func (p *apiaryProcess) start(ctx context.Context) {
	ctx, p.cancel = context.WithCancel(ctx)
	p.done = make(chan error, 1)
	go func() { p.done <- manager.Run(ctx, p.options) }()
}

// stop stops the manager and waits until it returned.
func (p *apiaryProcess) stop() error {
	if p.cancel == nil {
		return nil
	}
	p.cancel()
	p.cancel = nil
	select {
	case err := <-p.done:
		return err
	case <-time.After(30 * time.Second):
		return fmt.Errorf("the manager did not stop within 30s")
	}
}

// logOutput is where the managers log: nowhere, unless APIARY_TEST_LOGS is set.
func logOutput() io.Writer {
	if os.Getenv("APIARY_TEST_LOGS") != "" {
		return os.Stderr
	}
	return io.Discard
}
