// Package chart proves the Helm chart in charts/apiary: it lints, renders a
// hardened Deployment whose arguments follow the values, refuses bad values
// with messages naming the field, carries exactly the RBAC generated from the
// controllers' markers, and that RBAC alone lets Apiary run the quick start
// on a real API server; its tenant ClusterRoles, aggregated into edit and
// view, grant a tenant its workspaces and nothing Apiary or an administrator
// writes.
package chart

import (
	"os"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/test/charttest"
	"github.com/apiaryhq/apiary/test/world"
)

const (
	releaseName      = "apiary"
	releaseNamespace = "apiary-system"
)

var (
	env *testenv.Environment
	// workDir is the world's work folder, where the manager is built.
	workDir string
)

func TestMain(m *testing.M) {
	if kubeconfig := os.Getenv(managerKubeconfigEnv); kubeconfig != "" {
		// Re-executed by startManagerProcess: run only the manager.
		os.Exit(runManagerProcess(kubeconfig, os.Getenv(managerLeaseNamespaceEnv)))
	}
	world.Main(m, world.World{Name: "chart", Management: true}, func(r *world.Running) error {
		env, workDir = r.Management, r.Dir
		return nil
	})
}

// chartDir is charts/apiary in the repository.
func chartDir() string { return charttest.Dir() }

// loadChart loads charts/apiary with the Helm SDK.
func loadChart(t testing.TB) *chart.Chart {
	t.Helper()
	ch, err := charttest.Load()
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// render renders the chart as `helm template` would (charttest.Render).
func render(ch *chart.Chart, name, namespace string, vals map[string]any) ([]*unstructured.Unstructured, error) {
	return charttest.Render(ch, name, namespace, vals)
}

// find returns the rendered objects of a kind.
func find(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	return charttest.Find(objs, kind)
}
