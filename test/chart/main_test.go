// Package chart proves the Helm chart in charts/apiary: it lints, renders a
// hardened Deployment whose arguments follow the values, refuses bad values
// with messages naming the field, carries exactly the RBAC generated from the
// controllers' markers, and that RBAC alone lets Apiary run the quick start
// on a real API server; its tenant ClusterRoles, aggregated into edit and
// view, grant a tenant its workspaces and nothing Apiary or an administrator
// writes.
package chart

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/apiaryhq/apiary/internal/testenv"
)

const (
	releaseName      = "apiary"
	releaseNamespace = "apiary-system"
)

var env *testenv.Environment

func TestMain(m *testing.M) {
	if kubeconfig := os.Getenv(managerKubeconfigEnv); kubeconfig != "" {
		// Re-executed by startManagerProcess: run only the manager.
		os.Exit(runManagerProcess(kubeconfig, os.Getenv(managerLeaseNamespaceEnv)))
	}
	var err error
	env, err = testenv.Start()
	if err != nil {
		fmt.Fprintf(os.Stderr, "starting test environment: %v\n", err)
		os.Exit(1)
	}
	code := m.Run()
	if managerBinary != "" {
		_ = os.RemoveAll(filepath.Dir(managerBinary))
	}
	if err := env.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stopping test environment: %v\n", err)
	}
	os.Exit(code)
}

// chartDir is charts/apiary in the repository.
func chartDir() string { return filepath.Join(testenv.RepoRoot(), "charts", "apiary") }

// loadChart loads charts/apiary with the Helm SDK.
func loadChart(t testing.TB) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(chartDir())
	if err != nil {
		t.Fatalf("loading chart %s: %v", chartDir(), err)
	}
	return ch
}

// render renders the chart as `helm template` would, validating the values
// against values.schema.json, and returns the objects of its templates.
func render(ch *chart.Chart, name, namespace string, vals map[string]any) ([]*unstructured.Unstructured, error) {
	rv, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{
		Name: name, Namespace: namespace, IsInstall: true, Revision: 1,
	}, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(ch, rv)
	if err != nil {
		return nil, fmt.Errorf("rendering chart: %w", err)
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []*unstructured.Unstructured
	for _, n := range names {
		if !strings.HasSuffix(n, ".yaml") {
			continue
		}
		objs, err := testenv.DecodeObjects([]byte(files[n]))
		if err != nil {
			return nil, fmt.Errorf("decoding %s: %w", n, err)
		}
		out = append(out, objs...)
	}
	return out, nil
}

// find returns the rendered objects of a kind.
func find(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}
