package docs_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fluxcd/pkg/apis/kustomize"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

// TestExamplesUseTheDocumentedHealthChecks: the GitOps examples' fleet
// Kustomization carries exactly the healthCheckExprs of
// docs/flux-health-checks.md, which the controller and Flux tests prove.
func TestExamplesUseTheDocumentedHealthChecks(t *testing.T) {
	g := NewWithT(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs/flux-health-checks.md"))
	g.Expect(err).NotTo(HaveOccurred())
	_, rest, ok := strings.Cut(string(doc), "```yaml\n")
	g.Expect(ok).To(BeTrue(), "docs/flux-health-checks.md has a yaml block")
	block, _, _ := strings.Cut(rest, "```")
	example, err := os.ReadFile(filepath.Join(root, "gitops-examples/flux/fleet-kustomization.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	documented, shipped := healthCheckExprs(t, []byte(block)), healthCheckExprs(t, example)
	g.Expect(documented).To(HaveLen(3), "WorkspaceDeployment, Colony and TenantQuota")
	g.Expect(shipped).To(Equal(documented))
}

// healthCheckExprs reads the healthCheckExprs of a Flux Kustomization.
func healthCheckExprs(t *testing.T, data []byte) []kustomize.CustomHealthCheck {
	t.Helper()
	var ks struct {
		Spec struct {
			HealthCheckExprs []kustomize.CustomHealthCheck `json:"healthCheckExprs"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &ks); err != nil {
		t.Fatalf("parsing a Kustomization: %v", err)
	}
	return ks.Spec.HealthCheckExprs
}
