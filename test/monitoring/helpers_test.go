package monitoring

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/kube-state-metrics/v2/pkg/customresourcestate"
	"k8s.io/kube-state-metrics/v2/pkg/metric"
	yaml "sigs.k8s.io/yaml/goyaml.v3"

	"github.com/apiaryhq/apiary/internal/metrics"
)

// repoFile is a path of the repository, from this package's folder.
func repoFile(rel string) string { return filepath.Join("..", "..", filepath.FromSlash(rel)) }

func readRepoFile(t testing.TB, rel string) []byte {
	t.Helper()
	data, err := os.ReadFile(repoFile(rel))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

const (
	ksmConfigFile = "charts/apiary/files/kube-state-metrics.yaml"
	rulesFile     = "charts/apiary/files/prometheus-rules.yaml"
	dashboardFile = "charts/apiary/files/grafana-dashboard.json"
	docsFile      = "docs/monitoring.md"
)

// ksmFile is the whole configuration file: kube-state-metrics reads its spec.
type ksmFile struct {
	Kind string                          `yaml:"kind"`
	Spec customresourcestate.MetricsSpec `yaml:"spec"`
}

// ksmResources decodes the shipped configuration into kube-state-metrics'
// own types, refusing unknown fields (a misspelt key would otherwise be
// dropped silently), and lower-cases the metric types as kube-state-metrics
// does before it compiles them.
func ksmResources(t testing.TB) []customresourcestate.Resource {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(readRepoFile(t, ksmConfigFile)))
	dec.KnownFields(true)
	var f ksmFile
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("decoding %s: %v", ksmConfigFile, err)
	}
	if f.Kind != "CustomResourceStateMetrics" {
		t.Fatalf("%s: kind %q, want CustomResourceStateMetrics", ksmConfigFile, f.Kind)
	}
	for i := range f.Spec.Resources {
		for j := range f.Spec.Resources[i].Metrics {
			m := &f.Spec.Resources[i].Metrics[j].Each
			m.Type = metric.Type(strings.ToLower(string(m.Type)))
		}
	}
	return f.Spec.Resources
}

// ksmFamilies are the metric names the configuration defines.
func ksmFamilies(t testing.TB) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, r := range ksmResources(t) {
		f, err := customresourcestate.NewCustomResourceMetrics(r)
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range f.MetricFamilyGenerators() {
			out[g.Name] = true
		}
	}
	return out
}

var descRE = regexp.MustCompile(`fqName: "([^"]+)".*variableLabels: \{([^}]*)\}`)

// apiaryMetrics are the metrics internal/metrics registers, with their labels.
func apiaryMetrics(t testing.TB) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	ch := make(chan *prometheus.Desc, 100)
	for _, c := range metrics.Collectors() {
		c.Describe(ch)
	}
	close(ch)
	for d := range ch {
		m := descRE.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("cannot read %s", d)
		}
		var labels []string
		if m[2] != "" {
			labels = strings.Split(m[2], ",")
		}
		out[m[1]] = labels
	}
	return out
}

// controllerRuntimeMetrics are the controller-runtime and client-go metrics
// the dashboard and rules may use.
func controllerRuntimeMetrics(t testing.TB) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(readRepoFile(t, "test/monitoring/testdata/controller-runtime-metrics.txt")))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			out[l] = true
		}
	}
	return out
}

// known reports whether a series name belongs to a known metric: a
// histogram's _bucket, _sum and _count series belong to its name.
func known(name string, sets ...map[string]bool) bool {
	for _, n := range []string{name, strings.TrimSuffix(name, "_bucket"), strings.TrimSuffix(name, "_sum"), strings.TrimSuffix(name, "_count")} {
		for _, s := range sets {
			if s[n] {
				return true
			}
		}
	}
	return false
}
