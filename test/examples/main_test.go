// Package examples_test runs gitops-examples/ end to end, as committed: a
// loopback Git server holds the fleet folder, Flux's real source-controller
// and kustomize-controller apply it with the committed Kustomizations
// (SOPS-decrypting the committed Secrets with the examples' throwaway age
// key), the k0rdent stand-in provisions the clusters and installs the
// workspaces on a child control plane, and Apiary runs in direct mode and
// in Git mode (configured from gitops-examples/apiary/values-git.yaml).
//
// Substituted, because a test cannot use them: the GitRepository's URL (the
// loopback server's) and the Git credentials in its Secret fleet-git-auth.
// Everything else is read from gitops-examples/ unchanged.
//
// Wall-time budget: each mode starts its own management and child control
// planes and Flux (a Namespace pruned by Flux never goes away without
// kube-controller-manager): about 50 s per mode, 100 s for the package
// (measured on two shared cores), 5 min at worst; timeout bounds each wait.
package examples_test

import (
	"flag"
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

const (
	// timeout bounds each wait of the scenario.
	timeout  = 2 * time.Minute
	repoName = "fleet.git"
	branch   = "main"
	fluxNS   = "flux-system"
	// gitUser and gitPassword are the loopback server's credentials, kept
	// in the Secret the committed GitRepository names.
	gitUser     = "fleet"
	gitPassword = "loopback-only"
	// gitAuthSecret and ageSecret are the Secrets the committed Flux
	// objects name; the README's walkthrough creates them by hand.
	gitAuthSecret = "fleet-git-auth"
	ageSecret     = "sops-age"
	// teamNS is the namespace of the committed fleet.
	teamNS = "team-research"
)

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		fmt.Println("skipping the GitOps examples end to end in -short mode")
		os.Exit(0)
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(logOutput())))
	os.Exit(m.Run())
}

// logOutput is where the managers log: nowhere, unless APIARY_TEST_LOGS is set.
func logOutput() io.Writer {
	if os.Getenv("APIARY_TEST_LOGS") != "" {
		return os.Stderr
	}
	return io.Discard
}
