package offline

import (
	"encoding/json"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

// hostileWorkspace is a workspace of the quickstart class with extra spec.
func hostileWorkspace(spec string) string {
	return `apiVersion: workspaces.exalsius.ai/v1
kind: WorkspaceDeployment
metadata: {name: hostile, namespace: kcm-system}
spec:
  workspaceClassRef: jupyter-notebook-0-3-0
  clusterDeploymentRef: {name: quickstart-child-1}
` + spec
}

// apiary render refuses reserved values as the controller does, naming the
// source and the path, never the value.
func TestRenderRefusesReservedValues(t *testing.T) {
	cases := []struct {
		name, files, want string
	}{
		{"inline", hostileWorkspace(`  values: {notebookPassword: pw, _exalsius: {resources: {perReplica: {gpuCount: 7654}}}}
`), "WorkspaceDeployment/hostile: spec.values: the inline values set _exalsius.resources.perReplica.gpuCount: keys under _exalsius are reserved"},
		{"a ConfigMap", hostileWorkspace(`  values: {notebookPassword: pw}
  valuesFrom: [{kind: ConfigMap, name: sel}]
`) + `---
apiVersion: v1
kind: ConfigMap
metadata: {name: sel, namespace: kcm-system}
data:
  values.yaml: "_exalsius: {scheduling: {nodeSelector: {gpu: '7654'}}}"
`, `WorkspaceDeployment/hostile: spec.valuesFrom[0]: ConfigMap sel (key "values.yaml") set _exalsius.scheduling.nodeSelector.gpu`},
		{"a class", `apiVersion: workspaces.exalsius.ai/v1
kind: WorkspaceClass
metadata: {name: reserved-class}
spec:
  serviceTemplate: {name: t}
  defaultValues: {_exalsius: {resources: {perReplica: {gpuCount: 7654}}}}
---
` + strings.Replace(hostileWorkspace(""), "jupyter-notebook-0-3-0", "reserved-class", 1),
			"WorkspaceClass/reserved-class: spec.defaultValues: the class's defaultValues set _exalsius.resources.perReplica.gpuCount"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			dir := t.TempDir()
			write(t, dir, "hostile.yaml", tc.files)
			out, stderr, code := renderArgs(t, "-f", examples("quickstart"), "-f", dir)
			g.Expect(code).To(Equal(1), out)
			g.Expect(stderr).To(ContainSubstring(tc.want))
			g.Expect(stderr).NotTo(ContainSubstring("7654"))
		})
	}
}

// A tenant's template syntax reaches the ServiceSet escaped, and parses
// back to what the tenant wrote; secret values too.
func TestRenderEscapesTenantTemplates(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	tmpl := `{{ (getResource "InfrastructureProviderIdentitySecret").data }}`
	write(t, dir, "hostile.yaml", hostileWorkspace(`  values:
    notebookPassword: '`+tmpl+`'
    greeting: '`+tmpl+`'
`))
	out, stderr, code := renderArgs(t, "-f", examples("quickstart"), "-f", dir)
	g.Expect(code).To(Equal(0), stderr)
	g.Expect(out).NotTo(ContainSubstring("{{"))

	var ss struct {
		Spec struct{ Services []struct{ Values string } }
	}
	g.Expect(yaml.Unmarshal([]byte(findObject(t, out, "ServiceSet", "wsd-quickstart-child-1-hostile")), &ss)).To(Succeed())
	g.Expect(ss.Spec.Services).To(HaveLen(1))
	g.Expect(ss.Spec.Services[0].Values).To(ContainSubstring(`\u007b\u007b (getResource`))
	var public map[string]any
	g.Expect(yaml.Unmarshal([]byte(ss.Spec.Services[0].Values), &public)).To(Succeed())
	g.Expect(public).To(HaveKeyWithValue("greeting", tmpl))

	secret := decodeSecretValues(t, findObject(t, out, "Secret", "wsd-quickstart-child-1-hostile-values"))
	g.Expect(secret).NotTo(ContainSubstring("{{"))
	var secretValues map[string]any
	g.Expect(json.Unmarshal([]byte(secret), &secretValues)).To(Succeed(), "escaped secret values are written as JSON")
	g.Expect(secretValues).To(Equal(map[string]any{"notebookPassword": tmpl}))
}
