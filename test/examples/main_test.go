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
	"testing"
	"time"

	"github.com/apiaryhq/apiary/test/world"
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

// TestMain runs the tests, each starting the world of its mode.
func TestMain(m *testing.M) {
	world.Main(m, world.World{Name: "examples", Short: true}, nil)
}
