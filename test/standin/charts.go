package standin

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
)

// Names of the charts the stand-in ships (test/standin/charts). A
// ServiceTemplate installs ChartWorkspace unless AnnotationChart names
// another one.
const (
	// ChartWorkspace records the values of its release in the ConfigMap
	// <release>-values (key "values.json") and creates one ClusterIP Service
	// <release>-<name> per entry of the list value "endpoints" ({name, port}).
	ChartWorkspace = "workspace"
	// ChartWorkspaceHub is shaped like the workspace hub's charts
	// (jupyter-notebook, devpod): what ChartWorkspace does, plus the
	// Deployment <release> with replicas 1 hard-coded (no value changes it)
	// and the PersistentVolumeClaim <release>, not kept on uninstall.
	ChartWorkspaceHub = "workspace-hub"
	// ChartPrerequisite creates the ConfigMap <release>-installed.
	ChartPrerequisite = "prerequisite"
)

// ValuesConfigMapSuffix is appended to a release name to get the ConfigMap in
// which ChartWorkspace and ChartWorkspaceHub record the values of the release.
const ValuesConfigMapSuffix = "-values"

// ValuesConfigMapKey is the data key of the values (JSON) in that ConfigMap.
const ValuesConfigMapKey = "values.json"

// InstalledConfigMapSuffix is appended to a release name to get the ConfigMap
// that ChartPrerequisite creates.
const InstalledConfigMapSuffix = "-installed"

//go:embed all:charts
var charts embed.FS

// ChartNames lists the charts the stand-in ships, sorted.
func ChartNames() []string {
	entries, err := fs.ReadDir(charts, "charts")
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names
}

// loadChart loads an embedded chart afresh (Helm may change the chart it
// installs, so it is never shared).
func loadChart(name string) (*chart.Chart, error) {
	root := path.Join("charts", name)
	if st, err := fs.Stat(charts, root); err != nil || !st.IsDir() || name == "" || strings.ContainsAny(name, "/.") {
		return nil, fmt.Errorf("the stand-in ships no chart %q (it has %v)", name, ChartNames())
	}
	var files []*loader.BufferedFile
	err := fs.WalkDir(charts, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := charts.ReadFile(p)
		if err != nil {
			return err
		}
		files = append(files, &loader.BufferedFile{Name: p[len(root)+1:], Data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading chart %s: %w", name, err)
	}
	c, err := loader.LoadFiles(files)
	if err != nil {
		return nil, fmt.Errorf("loading chart %s: %w", name, err)
	}
	return c, nil
}
