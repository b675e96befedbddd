package monitoring

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// panel is the part of a Grafana panel the tests read.
type panel struct {
	Title      string `json:"title"`
	Type       string `json:"type"`
	Datasource *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

// dashboardQueries returns the dashboard's queries by panel title.
func dashboardQueries(t *testing.T) (map[string][]string, map[string]any) {
	t.Helper()
	var d struct {
		Panels []panel `json:"panels"`
	}
	data := readRepoFile(t, dashboardFile)
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	raw := map[string]any{}
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q does not query the dashboard's data source variable", p.Title)
			}
			for _, tg := range p.Targets {
				out[p.Title] = append(out[p.Title], tg.Expr)
			}
		}
	}
	walk(d.Panels)
	return out, raw
}

// grafanaVariables are replaced by durations before parsing, as Grafana does.
var grafanaVariables = strings.NewReplacer("$__rate_interval", "5m", "$__interval", "1m", "$__range", "1h")

// metricNames parses a PromQL expression and returns the metric names it selects.
func metricNames(expr string) ([]string, error) {
	e, err := parser.NewParser(parser.Options{}).ParseExpr(grafanaVariables.Replace(expr))
	if err != nil {
		return nil, err
	}
	var names []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		for _, m := range vs.LabelMatchers {
			if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
				name = m.Value
			}
		}
		names = append(names, name)
		return nil
	})
	return names, nil
}

// knownMetrics are the metric names the dashboard and rules may select.
func knownMetrics(t *testing.T) []map[string]bool {
	apiary := map[string]bool{}
	for n := range apiaryMetrics(t) {
		apiary[n] = true
	}
	return []map[string]bool{apiary, ksmFamilies(t), controllerRuntimeMetrics(t)}
}

// TestDashboardQueries: every query of the dashboard parses with
// Prometheus' parser and selects only metrics that exist, and every metric
// of Apiary's registry is on the dashboard.
func TestDashboardQueries(t *testing.T) {
	g := NewWithT(t)
	queries, raw := dashboardQueries(t)
	g.Expect(raw["uid"]).To(Equal("apiary-overview"))
	g.Expect(queries).NotTo(BeEmpty())
	sets := knownMetrics(t)
	used := map[string]bool{}
	for title, exprs := range queries {
		for _, expr := range exprs {
			names, err := metricNames(expr)
			g.Expect(err).NotTo(HaveOccurred(), "panel %q: %s", title, expr)
			g.Expect(names).NotTo(BeEmpty(), "panel %q selects nothing: %s", title, expr)
			for _, n := range names {
				g.Expect(known(n, sets...)).To(BeTrue(), "panel %q selects %s, which nothing exports", title, n)
				used[n], used[strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(n, "_bucket"), "_sum"), "_count")] = true, true
			}
		}
	}
	var missing []string
	for n := range apiaryMetrics(t) {
		if !used[n] {
			missing = append(missing, n)
		}
	}
	sort.Strings(missing)
	g.Expect(missing).To(BeEmpty(), "Apiary metrics the dashboard does not show")
}

// TestRuleQueriesNameExistingMetrics: every metric an alert selects exists.
func TestRuleQueriesNameExistingMetrics(t *testing.T) {
	g := NewWithT(t)
	sets := knownMetrics(t)
	for name, r := range alertRules(t) {
		names, err := metricNames(r.Expr)
		g.Expect(err).NotTo(HaveOccurred(), name)
		for _, n := range names {
			g.Expect(known(n, sets...)).To(BeTrue(), "%s selects %s, which nothing exports", name, n)
		}
	}
}

// TestQueryCheckCatchesUnknownMetrics: the checks above can fail.
func TestQueryCheckCatchesUnknownMetrics(t *testing.T) {
	g := NewWithT(t)
	sets := knownMetrics(t)
	names, err := metricNames(`sum(rate(apiary_git_pushes_totl[$__rate_interval]))`)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(known(names[0], sets...)).To(BeFalse())
	_, err = metricNames(`sum by (reason (apiary_workspaces_waiting)`)
	g.Expect(err).To(HaveOccurred())
	names, err = metricNames(`histogram_quantile(0.9, sum by (le) (rate(apiary_git_sync_latency_seconds_bucket[5m])))`)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(known(names[0], sets...)).To(BeTrue())
}

// TestDocsListEveryMetric: docs/monitoring.md has a table row for every
// metric of Apiary's registry and of the kube-state-metrics configuration,
// naming each label of Apiary's.
func TestDocsListEveryMetric(t *testing.T) {
	g := NewWithT(t)
	rows := map[string]string{}
	for _, line := range strings.Split(string(readRepoFile(t, docsFile)), "\n") {
		if strings.HasPrefix(line, "| `") {
			name, _, _ := strings.Cut(strings.TrimPrefix(line, "| `"), "`")
			rows[name] = line
		}
	}
	for name, labels := range apiaryMetrics(t) {
		g.Expect(rows).To(HaveKey(name), "docs/monitoring.md lists %s", name)
		for _, l := range labels {
			g.Expect(rows[name]).To(ContainSubstring("`"+l+"`"), "the row of %s names its label %s", name, l)
		}
	}
	for name := range ksmFamilies(t) {
		g.Expect(rows).To(HaveKey(name), "docs/monitoring.md lists %s", name)
	}
}
