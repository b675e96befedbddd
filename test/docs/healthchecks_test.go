package docs_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/apiaryhq/apiary/internal/testenv"
	. "github.com/onsi/gomega"
)

// TestExamplesUseTheDocumentedHealthChecks: the GitOps examples' fleet
// Kustomization carries exactly the healthCheckExprs of
// docs/flux-health-checks.md, which the controller and Flux tests prove.
func TestExamplesUseTheDocumentedHealthChecks(t *testing.T) {
	g := NewWithT(t)
	documented, err := testenv.HealthCheckExprs()
	g.Expect(err).NotTo(HaveOccurred())
	example, err := os.ReadFile(filepath.Join(root, "gitops-examples/flux/fleet-kustomization.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	shipped, err := testenv.KustomizationHealthCheckExprs(example)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(documented).To(HaveLen(3), "WorkspaceDeployment, Colony and TenantQuota")
	g.Expect(shipped).To(Equal(documented))
}
