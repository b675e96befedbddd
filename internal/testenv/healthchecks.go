package testenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/fluxcd/pkg/apis/kustomize"
	"sigs.k8s.io/yaml"
)

// HealthChecksDoc is the document that holds Apiary's Flux healthCheckExprs,
// relative to the repository's root: the one source the tests and the
// GitOps examples use.
const HealthChecksDoc = "docs/flux-health-checks.md"

// HealthCheckExprs reads the healthCheckExprs of the Kustomization in the
// first yaml block of HealthChecksDoc.
func HealthCheckExprs() ([]kustomize.CustomHealthCheck, error) {
	data, err := os.ReadFile(filepath.Join(RepoRoot(), HealthChecksDoc))
	if err != nil {
		return nil, fmt.Errorf("reading the health checks: %w", err)
	}
	_, rest, ok := strings.Cut(string(data), "```yaml\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		return nil, fmt.Errorf("%s has no yaml block", HealthChecksDoc)
	}
	return KustomizationHealthCheckExprs([]byte(block))
}

// KustomizationHealthCheckExprs reads the healthCheckExprs of a Flux
// Kustomization's YAML.
func KustomizationHealthCheckExprs(data []byte) ([]kustomize.CustomHealthCheck, error) {
	var ks struct {
		Spec struct {
			HealthCheckExprs []kustomize.CustomHealthCheck `json:"healthCheckExprs"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &ks); err != nil {
		return nil, fmt.Errorf("parsing a Kustomization: %w", err)
	}
	return ks.Spec.HealthCheckExprs, nil
}
