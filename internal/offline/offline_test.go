package offline

import (
	"bytes"
	"encoding/base64"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	"github.com/apiaryhq/apiary/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite testdata/golden from the current output")

// quickstartPassword is the notebook password of examples/quickstart.
const quickstartPassword = "change-me-please"

func examples(name string) string { return filepath.Join(testenv.RepoRoot(), "examples", name) }

// renderArgs runs the command as a user does and returns stdout and stderr.
func renderArgs(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return stdout.String(), stderr.String(), code
}

func TestGoldenExamples(t *testing.T) {
	cases := []struct {
		golden string
		args   []string
	}{
		{"quickstart.yaml", []string{"-f", examples("quickstart")}},
		{"gpu.yaml", []string{"-f", examples("gpu")}},
		{"quickstart-redacted.yaml", []string{"-f", examples("quickstart"), "--redact-secrets"}},
	}
	for _, tc := range cases {
		t.Run(tc.golden, func(t *testing.T) {
			g := NewWithT(t)
			out, stderr, code := renderArgs(t, tc.args...)
			g.Expect(code).To(Equal(0), stderr)
			again, _, _ := renderArgs(t, tc.args...)
			g.Expect(again).To(Equal(out), "two runs give the same bytes")

			path := filepath.Join("testdata", "golden", tc.golden)
			if *update {
				g.Expect(os.WriteFile(path, []byte(out), 0o644)).To(Succeed())
			}
			want, err := os.ReadFile(path)
			g.Expect(err).NotTo(HaveOccurred(), "run the tests with -update to create it")
			g.Expect(out).To(Equal(string(want)), "output differs from %s; rerun with -update if intended", path)
		})
	}
}

func TestValuesFromNotInInputsWarns(t *testing.T) {
	g := NewWithT(t)
	out, stderr, code := renderArgs(t, "-f", examples("quickstart"), "-f", examples("gpu"))
	g.Expect(code).To(Equal(0))
	g.Expect(stderr).To(ContainSubstring("workspacedeployment-h100.yaml"))
	g.Expect(stderr).To(ContainSubstring("WorkspaceDeployment/llama-h100: spec.valuesFrom[0]"))
	// Nothing is invented for the missing Hugging Face token.
	g.Expect(out).NotTo(ContainSubstring("hfToken"))
	g.Expect(out).NotTo(ContainSubstring("wsd-quickstart-child-1-llama-h100-values"))
}

func TestValuesFromInputs(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	write(t, dir, "hf-token.yaml", `apiVersion: v1
kind: Secret
metadata: {name: hf-token, namespace: kcm-system}
stringData: {token: hf_secret_token}
`)
	out, stderr, code := renderArgs(t, "-f", examples("quickstart"), "-f", examples("gpu"), "-f", dir)
	g.Expect(code).To(Equal(0), stderr)
	g.Expect(stderr).NotTo(ContainSubstring("valuesFrom"))
	secret := findObject(t, out, "Secret", "wsd-quickstart-child-1-llama-h100-values")
	values := decodeSecretValues(t, secret)
	g.Expect(values).To(ContainSubstring("hfToken: hf_secret_token"))
	g.Expect(findObject(t, out, "ServiceSet", "wsd-quickstart-child-1-llama-h100")).NotTo(ContainSubstring("hf_secret_token"))
}

func TestSecretValues(t *testing.T) {
	g := NewWithT(t)
	out, _, code := renderArgs(t, "-f", examples("quickstart"))
	g.Expect(code).To(Equal(0))
	g.Expect(findObject(t, out, "ServiceSet", "wsd-quickstart-child-1-my-notebook")).NotTo(ContainSubstring(quickstartPassword))
	secret := findObject(t, out, "Secret", "wsd-quickstart-child-1-my-notebook-values")
	g.Expect(decodeSecretValues(t, secret)).To(ContainSubstring("notebookPassword: " + quickstartPassword))
	g.Expect(out).NotTo(ContainSubstring(quickstartPassword), "the password appears only base64-encoded")

	redacted, _, code := renderArgs(t, "-f", examples("quickstart"), "--redact-secrets")
	g.Expect(code).To(Equal(0))
	encoded := base64.StdEncoding.EncodeToString([]byte("notebookPassword: " + quickstartPassword + "\n"))
	g.Expect(out).To(ContainSubstring(encoded))
	g.Expect(redacted).NotTo(ContainSubstring(encoded))
	g.Expect(redacted).NotTo(ContainSubstring(quickstartPassword))
	g.Expect(findObject(t, redacted, "Secret", "wsd-quickstart-child-1-my-notebook-values")).To(ContainSubstring(Redacted))
}

func TestOutputFile(t *testing.T) {
	g := NewWithT(t)
	path := filepath.Join(t.TempDir(), "out.yaml")
	stdout, stderr, code := renderArgs(t, "--filename", examples("quickstart"), "--output", path)
	g.Expect(code).To(Equal(0), stderr)
	g.Expect(stdout).To(BeEmpty())
	want, _, _ := renderArgs(t, "-f", examples("quickstart"))
	got, err := os.ReadFile(path)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(got)).To(Equal(want))
}

func TestErrors(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "orphan.yaml", `apiVersion: workspaces.exalsius.ai/v1
kind: WorkspaceDeployment
metadata: {name: orphan, namespace: kcm-system}
spec:
  workspaceClassRef: no-such-class
  clusterDeploymentRef: {name: c}
`)
	write(t, dir, "noclusterref.yaml", `apiVersion: workspaces.exalsius.ai/v1
kind: WorkspaceDeployment
metadata: {name: nocd}
spec:
  workspaceClassRef: jupyter-notebook-0-3-0
  clusterDeploymentRef: {}
`)
	write(t, dir, "hostile.yaml", `apiVersion: workspaces.exalsius.ai/v1
kind: WorkspaceDeployment
metadata: {name: hostile}
spec:
  workspaceClassRef: jupyter-notebook-0-3-0
  clusterDeploymentRef: {name: c}
  resources: {replicas: 3, perReplica: {cpu: "4000000000000000", memory: 4Pi}}
`)
	write(t, dir, "broken.yaml", "apiVersion: v1\nkind: ConfigMap\n---\nmetadata:\n  name: [unclosed\n")
	write(t, dir, "unknown.yaml", "apiVersion: infra.exalsius.ai/v1\nkind: Colony\nmetadata: {name: c}\nspec: {colonyClusterz: []}\n")

	cases := []struct {
		name string
		file string
		want []string
	}{
		{"class absent", "orphan.yaml", []string{"orphan.yaml: WorkspaceDeployment/orphan: spec.workspaceClassRef:", `"no-such-class"`}},
		{"cluster ref missing", "noclusterref.yaml", []string{"noclusterref.yaml: WorkspaceDeployment/nocd: spec.clusterDeploymentRef.name: is required"}},
		{"resources past the limits", "hostile.yaml", []string{"hostile.yaml: WorkspaceDeployment/hostile: spec.resources: perReplica.cpu 4P is out of bounds: it must be 0 to 4096; perReplica.memory 4Pi"}},
		{"broken YAML", "broken.yaml", []string{"broken.yaml:5: document 2"}},
		{"unknown field", "unknown.yaml", []string{"unknown.yaml:1: document 1: Colony:", "colonyClusterz"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			out, stderr, code := renderArgs(t, "-f", examples("quickstart"), "-f", filepath.Join(dir, tc.file))
			g.Expect(code).To(Equal(1))
			g.Expect(out).To(BeEmpty())
			for _, w := range tc.want {
				g.Expect(stderr).To(ContainSubstring(w))
			}
		})
	}
}

func TestBundleTemplateError(t *testing.T) {
	g := NewWithT(t)
	bundles := t.TempDir()
	write(t, bundles, "broken-cluster/Chart.yaml", "apiVersion: v2\nname: broken-cluster\nversion: 0.1.0\n")
	write(t, bundles, "broken-cluster/templates/cd.yaml",
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: {{ required \"values.needed is required\" .Values.needed }}\n")
	inputs := t.TempDir()
	write(t, inputs, "colony.yaml", `apiVersion: infra.exalsius.ai/v1
kind: Colony
metadata: {name: c, namespace: ns}
spec:
  colonyClusters:
    - clusterName: one
      bundle: {name: broken-cluster}
`)
	out, stderr, code := renderArgs(t, "-f", inputs, "--bundle-dir", bundles)
	g.Expect(code).To(Equal(1))
	g.Expect(out).To(BeEmpty())
	g.Expect(stderr).To(ContainSubstring("colony.yaml: Colony/c: spec.colonyClusters[0]"))
	g.Expect(stderr).To(ContainSubstring("templates/cd.yaml:6"))
	g.Expect(stderr).To(ContainSubstring(filepath.Join(bundles, "broken-cluster")))
}

func TestBadArguments(t *testing.T) {
	g := NewWithT(t)
	_, stderr, code := renderArgs(t)
	g.Expect(code).To(Equal(2))
	g.Expect(stderr).To(ContainSubstring("-f"))
	_, stderr, code = renderArgs(t, "-f", filepath.Join(t.TempDir(), "missing.yaml"))
	g.Expect(code).To(Equal(1))
	g.Expect(stderr).To(ContainSubstring("missing.yaml"))
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// findObject returns the YAML document of the object of that kind and name.
func findObject(t *testing.T, out, kind, name string) string {
	t.Helper()
	for _, doc := range strings.Split(out, "---\n") {
		var o struct {
			Kind     string
			Metadata struct{ Name string }
		}
		if err := yaml.Unmarshal([]byte(doc), &o); err != nil {
			t.Fatalf("output is not YAML: %v", err)
		}
		if o.Kind == kind && o.Metadata.Name == name {
			return doc
		}
	}
	t.Fatalf("no %s %s in the output:\n%s", kind, name, out)
	return ""
}

func decodeSecretValues(t *testing.T, doc string) string {
	t.Helper()
	var s struct{ Data map[string][]byte }
	if err := yaml.Unmarshal([]byte(doc), &s); err != nil {
		t.Fatal(err)
	}
	return string(s.Data["values.yaml"])
}
