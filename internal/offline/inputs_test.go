package offline

import (
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// A second workspace of the GPU class on the same cluster shares the
// prerequisite ServiceSet, which is printed once.
func TestSharedPrerequisitePrintedOnce(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	write(t, dir, "second.yaml", `apiVersion: workspaces.exalsius.ai/v1
kind: WorkspaceDeployment
metadata: {name: second, namespace: kcm-system}
spec:
  workspaceClassRef: vllm-inference-1-2-0
  clusterDeploymentRef: {name: quickstart-child-1}
`)
	out, stderr, code := renderArgs(t, "-f", examples("gpu"), "-f", dir)
	g.Expect(code).To(Equal(0), stderr)
	g.Expect(strings.Count(out, "name: wsprereq-quickstart-child-1-gpu-operator-v25-3-0\n")).To(Equal(1))
	findObject(t, out, "ServiceSet", "wsd-quickstart-child-1-second")
}

// A prerequisite the Colony installs through the ClusterDeployment's
// services is not installed again.
func TestPrerequisiteInstalledByColony(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	write(t, dir, "colony.yaml", `apiVersion: infra.exalsius.ai/v1
kind: Colony
metadata: {name: quickstart, namespace: kcm-system}
spec:
  colonyClusters:
    - clusterName: child-1
      clusterDeploymentSpec:
        template: t
        serviceSpec:
          services:
            - {name: gpu-operator, namespace: gpu-operator, template: gpu-operator-v25-3-0}
`)
	out, stderr, code := renderArgs(t, "-f", examples("gpu"), "-f", dir)
	g.Expect(code).To(Equal(0), stderr)
	g.Expect(out).NotTo(ContainSubstring("wsprereq-"))
	findObject(t, out, "ClusterDeployment", "quickstart-child-1")
}

// A bundle given by configMapRef and values given by a ConfigMap are read
// from the inputs; a missing bundle ConfigMap names the field.
func TestConfigMapsFromInputs(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	write(t, dir, "colony.yaml", `apiVersion: infra.exalsius.ai/v1
kind: Colony
metadata: {name: c}
spec:
  colonyClusters:
    - clusterName: one
      bundle: {configMapRef: {name: my-bundle}}
`)
	_, stderr, code := renderArgs(t, "-f", dir)
	g.Expect(code).To(Equal(1))
	g.Expect(stderr).To(ContainSubstring("colony.yaml: Colony/c: spec.colonyClusters[0].bundle.configMapRef: bundle ConfigMap default/my-bundle is not among the inputs"))

	write(t, dir, "bundle.yaml", `apiVersion: v1
kind: ConfigMap
metadata: {name: my-bundle}
data:
  Chart.yaml: "apiVersion: v2\nname: my-bundle\nversion: 0.1.0\n"
  templates__cm.yaml: |
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: {{ .Input.clusterDeploymentName }}
      namespace: {{ .Release.Namespace }}
    data:
      mode: {{ .Input.operator.deliveryMode }}
`)
	out, stderr, code := renderArgs(t, "-f", dir, "--delivery-mode", "git")
	g.Expect(code).To(Equal(0), stderr)
	cm := findObject(t, out, "ConfigMap", "c-one")
	g.Expect(cm).To(ContainSubstring("mode: git"))
	g.Expect(cm).To(ContainSubstring("infra.exalsius.ai/cluster: one"))
	g.Expect(cm).To(ContainSubstring("namespace: default"))
}

func TestValuesFromConfigMapMissingKey(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	write(t, dir, "ws.yaml", `apiVersion: workspaces.exalsius.ai/v1
kind: WorkspaceDeployment
metadata: {name: ws, namespace: kcm-system}
spec:
  workspaceClassRef: vllm-inference-1-2-0
  clusterDeploymentRef: {name: quickstart-child-1}
  valuesFrom:
    - {kind: ConfigMap, name: extra, valuesKey: other.yaml}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: extra, namespace: kcm-system}
data: {values.yaml: "a: 1"}
`)
	_, stderr, code := renderArgs(t, "-f", filepath.Join(examples("gpu"), "workspaceclass-vllm.yaml"), "-f", dir)
	g.Expect(code).To(Equal(1))
	g.Expect(stderr).To(ContainSubstring(`ws.yaml: WorkspaceDeployment/ws: spec.valuesFrom[0]: ConfigMap kcm-system/extra`))
	g.Expect(stderr).To(ContainSubstring(`has no key "other.yaml"`))
}

// Arbitrary input files never panic, and a failure always names the file.
func FuzzRender(f *testing.F) {
	f.Add("apiVersion: v1\nkind: ConfigMap\n---\nmetadata:\n  name: [x\n")
	f.Add("apiVersion: workspaces.exalsius.ai/v1\nkind: WorkspaceDeployment\nmetadata: {name: a}\nspec: {workspaceClassRef: b}\n")
	f.Add("apiVersion: infra.exalsius.ai/v1\nkind: Colony\nmetadata: {name: c}\nspec:\n  colonyClusters:\n  - clusterName: x\n    values: {template: t}\n")
	f.Fuzz(func(t *testing.T, content string) {
		dir := t.TempDir()
		write(t, dir, "in.yaml", content)
		_, err := Render(Options{Files: []string{dir}})
		if err != nil && !strings.Contains(err.Error(), "in.yaml") {
			t.Fatalf("error does not name the file: %v", err)
		}
	})
}

// A WorkspaceClass's bundle ConfigMap is found beside its ServiceTemplate.
func TestClassBundleFromConfigMapBesideTheTemplate(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	write(t, dir, "class.yaml", `apiVersion: workspaces.exalsius.ai/v1
kind: WorkspaceClass
metadata: {name: custom-1-0-0}
spec:
  displayName: Custom
  serviceTemplate: {name: custom-1-0-0, namespace: templates}
  defaultResources: {}
  bundle: {configMapRef: {name: custom-bundle}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: custom-bundle, namespace: templates}
data:
  Chart.yaml: "apiVersion: v2\nname: custom\nversion: 0.1.0\n"
  templates__cm.yaml: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Input.serviceSetName }}-custom\n  namespace: {{ .Input.cluster.namespace }}\ndata:\n  release: {{ .Input.releaseName }}\n"
---
apiVersion: workspaces.exalsius.ai/v1
kind: WorkspaceDeployment
metadata: {name: w, namespace: team}
spec:
  workspaceClassRef: custom-1-0-0
  clusterDeploymentRef: {name: c1}
`)
	out, stderr, code := renderArgs(t, "-f", filepath.Join(dir, "class.yaml"))
	g.Expect(code).To(Equal(0), stderr)
	findObject(t, out, "ConfigMap", "wsd-c1-w-custom")
}
