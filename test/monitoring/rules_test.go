package monitoring

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

// promtool is the promtool binary: $APIARY_PROMTOOL (the Makefile exports
// it), else where `make promtool` puts the version hack/promtool pins.
func promtool(t *testing.T) string {
	t.Helper()
	p := os.Getenv("APIARY_PROMTOOL")
	if p == "" {
		m := regexp.MustCompile(`github.com/prometheus/prometheus (v\S+)`).FindSubmatch(readRepoFile(t, "hack/promtool/go.mod"))
		if m == nil {
			t.Fatal("hack/promtool/go.mod pins no Prometheus version")
		}
		abs, err := filepath.Abs(repoFile("bin/promtool/" + string(m[1]) + "/promtool"))
		if err != nil {
			t.Fatal(err)
		}
		p = abs
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("promtool not found at %s: run `make promtool`, which builds it from the Go module proxy into bin/", p)
	}
	return p
}

// runPromtool runs promtool in dir and returns its output and whether it passed.
func runPromtool(t *testing.T, dir string, args ...string) (string, bool) {
	t.Helper()
	cmd := exec.Command(promtool(t), args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if _, failed := err.(*exec.ExitError); err != nil && !failed {
		t.Fatalf("running promtool: %v", err)
	}
	return string(out), err == nil
}

// rule is an alerting rule of the file, as far as the tests read it.
type rule struct {
	Alert       string            `json:"alert"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

func alertRules(t *testing.T) map[string]rule {
	t.Helper()
	var f struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []rule `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.Unmarshal(readRepoFile(t, rulesFile), &f); err != nil {
		t.Fatal(err)
	}
	out := map[string]rule{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				t.Fatalf("group %s holds a recording rule; the tests cover alerts only", g.Name)
			}
			out[r.Alert] = r
		}
	}
	return out
}

// Shapes of promtool's unit-test file.
type (
	unitTests struct {
		RuleFiles          []string    `json:"rule_files"`
		EvaluationInterval string      `json:"evaluation_interval"`
		Tests              []testGroup `json:"tests"`
	}
	testGroup struct {
		Name        string      `json:"name"`
		Interval    string      `json:"interval"`
		InputSeries []series    `json:"input_series"`
		AlertTests  []alertTest `json:"alert_rule_test"`
	}
	series struct {
		Series string `json:"series"`
		Values string `json:"values"`
	}
	alertTest struct {
		EvalTime  string     `json:"eval_time"`
		Alertname string     `json:"alertname"`
		ExpAlerts []expAlert `json:"exp_alerts"`
	}
	expAlert struct {
		ExpLabels      map[string]string `json:"exp_labels"`
		ExpAnnotations map[string]string `json:"exp_annotations"`
	}
)

// writeRuleTests writes the unit tests of every alert of alertCases next to
// a copy of the rule file.
func writeRuleTests(t *testing.T, dir string, rules map[string]rule, ruleFile []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), ruleFile, 0o644); err != nil {
		t.Fatal(err)
	}
	ut := unitTests{RuleFiles: []string{"rules.yaml"}, EvaluationInterval: "1m"}
	for _, c := range alertCases {
		r, ok := rules[c.alert]
		if !ok {
			t.Fatalf("no alert %s in %s", c.alert, rulesFile)
		}
		grp := testGroup{Name: c.alert, Interval: "1m", InputSeries: c.series}
		for _, at := range c.silent {
			grp.AlertTests = append(grp.AlertTests, alertTest{EvalTime: at, Alertname: c.alert})
		}
		labels := map[string]string{"severity": r.Labels["severity"]}
		for k, v := range c.labels {
			labels[k] = v
		}
		annotations := map[string]string{"summary": c.summary, "description": r.Annotations["description"], "runbook_url": r.Annotations["runbook_url"]}
		if c.description != "" {
			annotations["description"] = c.description
		}
		grp.AlertTests = append(grp.AlertTests, alertTest{EvalTime: c.firing, Alertname: c.alert,
			ExpAlerts: []expAlert{{ExpLabels: labels, ExpAnnotations: annotations}}})
		ut.Tests = append(ut.Tests, grp)
	}
	data, err := yaml.Marshal(ut)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tests.yaml"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestRulesPassPromtoolCheck(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(dir, "rules.yaml"), readRepoFile(t, rulesFile), 0o644)).To(Succeed())
	out, ok := runPromtool(t, dir, "check", "rules", "--lint=all", "--lint-fatal", "rules.yaml")
	g.Expect(ok).To(BeTrue(), out)
	g.Expect(out).To(ContainSubstring("SUCCESS: %d rules found", len(alertCases)))
}

// TestRuleUnitTests: promtool evaluates every alert over input series, at a
// moment it must not fire yet (or any more) and at one it fires, with the
// labels and rendered annotations a receiver gets.
func TestRuleUnitTests(t *testing.T) {
	g := NewWithT(t)
	rules := alertRules(t)
	tested := map[string]bool{}
	for _, c := range alertCases {
		tested[c.alert] = true
	}
	for name := range rules {
		g.Expect(tested).To(HaveKey(name), "alert %s has no unit test", name)
	}
	dir := t.TempDir()
	writeRuleTests(t, dir, rules, readRepoFile(t, rulesFile))
	out, ok := runPromtool(t, dir, "test", "rules", "tests.yaml")
	g.Expect(ok).To(BeTrue(), out)
	t.Log(out)
}

// TestBrokenRulesFailTheirTests: the unit tests are not vacuous. An alert
// whose expression never holds, or that fires without waiting its for,
// fails them, and promtool names the alert.
func TestBrokenRulesFailTheirTests(t *testing.T) {
	rules := alertRules(t)
	original := string(readRepoFile(t, rulesFile))
	for _, c := range alertCases {
		r := rules[c.alert]
		for what, broken := range map[string]string{
			"never fires": replaceRuleField(t, original, c.alert, "expr", r.Expr, "vector(0) > 1"),
			"without for": replaceRuleField(t, original, c.alert, "for", r.For, "0s"),
		} {
			t.Run(c.alert+" "+what, func(t *testing.T) {
				g := NewWithT(t)
				dir := t.TempDir()
				writeRuleTests(t, dir, rules, []byte(broken))
				out, ok := runPromtool(t, dir, "test", "rules", "tests.yaml")
				g.Expect(ok).To(BeFalse(), "the tests pass with a broken %s:\n%s", c.alert, out)
				g.Expect(out).To(ContainSubstring("alertname: " + c.alert))
				t.Log(out[:min(len(out), 400)])
			})
		}
	}
}

// replaceRuleField rewrites one field of an alert in the rule file's text,
// through a YAML round trip so the rest stays as it is.
func replaceRuleField(t *testing.T, text, alert, field, old, with string) string {
	t.Helper()
	var f map[string]any
	if err := yaml.Unmarshal([]byte(text), &f); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, grp := range f["groups"].([]any) {
		for _, r := range grp.(map[string]any)["rules"].([]any) {
			if m := r.(map[string]any); m["alert"] == alert {
				if m[field] != old {
					t.Fatalf("%s: %s is %v, not %q", alert, field, m[field], old)
				}
				m[field], found = with, true
			}
		}
	}
	if !found {
		t.Fatalf("no alert %s", alert)
	}
	out, err := yaml.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

// TestAlertsCarryWhatAReceiverNeeds: a severity, a summary, a description
// and a runbook link to their section of docs/monitoring.md.
func TestAlertsCarryWhatAReceiverNeeds(t *testing.T) {
	docs := string(readRepoFile(t, docsFile))
	for name, r := range alertRules(t) {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(r.Labels["severity"]).To(BeElementOf("warning", "critical"))
			g.Expect(r.Annotations["summary"]).NotTo(BeEmpty())
			g.Expect(r.Annotations["description"]).NotTo(BeEmpty())
			g.Expect(r.Annotations["runbook_url"]).To(Equal(
				"https://github.com/apiaryhq/apiary/blob/main/docs/monitoring.md#" + strings.ToLower(name)))
			g.Expect(docs).To(ContainSubstring("\n#### "+name+"\n"), "docs/monitoring.md has a section on %s", name)
		})
	}
}
