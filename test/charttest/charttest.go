// Package charttest renders the Helm chart in charts/apiary as `helm
// template` does and puts its tenant roles to work on a real API server:
// the built-in roles they aggregate into, bindings, and tenants
// impersonated. Suites use it to show what the shipped roles allow a tenant
// and what they refuse.
package charttest

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/apiaryhq/apiary/internal/testenv"
)

// Dir is charts/apiary in the repository.
func Dir() string { return filepath.Join(testenv.RepoRoot(), "charts", "apiary") }

// Load loads charts/apiary with the Helm SDK.
func Load() (*chart.Chart, error) {
	ch, err := loader.Load(Dir())
	if err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", Dir(), err)
	}
	return ch, nil
}

// Render renders the chart as `helm template` would, validating the values
// against values.schema.json, and returns the objects of its templates.
func Render(ch *chart.Chart, name, namespace string, vals map[string]any) ([]*unstructured.Unstructured, error) {
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

// Find returns the rendered objects of a kind.
func Find(objs []*unstructured.Unstructured, kind string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == kind {
			out = append(out, o)
		}
	}
	return out
}
