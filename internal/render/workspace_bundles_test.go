package render

import (
	"encoding/base64"
	"os"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	"github.com/apiaryhq/apiary/internal/naming"
)

const (
	// workspacePrerequisiteBundle is the registry name of the prerequisite
	// bundle: the registry finds it in templates.FS by its folder name.
	workspacePrerequisiteBundle = "workspace-prerequisite"
	// secretValuesYAML are the secret Helm values of the test workspace;
	// secretToken must appear nowhere in the output, nor in errors.
	secretToken      = "s3cr3t-t0ken-4f9a"
	secretValuesYAML = "auth:\n  token: " + secretToken + "\n"
	// testClusterNamespace is the ClusterDeployment's namespace of the
	// test inputs: the namespace their objects are confined to.
	testClusterNamespace = "team-a"
)

// must fails the test on an error of its set-up.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// builtinBundle gets a bundle of the registry's built-ins, as the manager does.
func builtinBundle(t *testing.T, name string) *Bundle {
	t.Helper()
	r, err := NewRegistry("")
	must(t, err)
	b, err := r.Get(name)
	must(t, err)
	return b
}

// workspaceInput is a full input of the workspace-serviceset bundle.
func workspaceInput() map[string]any {
	return map[string]any{
		"workspace": map[string]any{"name": "jupyter", "namespace": "team-a", "uid": "0d6c3e1c-0000-4000-8000-000000000002",
			"labels": map[string]any{"owner": "ana"}},
		"class":            map[string]any{"name": "jupyter-v1", "serviceTemplate": map[string]any{"name": "jupyter-1-0-0", "namespace": "kcm-system"}},
		"cluster":          map[string]any{"name": "colony-a-gpu", "namespace": "team-a"},
		"serviceSetName":   "wsd-colony-a-gpu-jupyter",
		"releaseName":      "wsd-colony-a-gpu-jupyter",
		"releaseNamespace": "ws-jupyter",
		"serviceTemplate":  "jupyter-1-0-0",
		"values":           `{"_exalsius":{"resources":{"replicas":1}},"image":"jupyter:1"}`,
		"valuesSecret":     nil,
		"helm":             map[string]any{"wait": true, "timeout": "15m0s"},
		"provider":         map[string]any{"name": "ksm-projectsveltos", "config": map[string]any{"priority": 200}},
		"labels":           map[string]any{"team": "a"},
		"operator":         map[string]any{"deliveryMode": "direct"},
	}
}

// prerequisiteInput is a full input of the workspace-prerequisite bundle.
func prerequisiteInput() map[string]any {
	return map[string]any{
		"cluster":          map[string]any{"name": "colony-a-gpu", "namespace": "team-a"},
		"serviceSetName":   "wsprereq-colony-a-gpu-gpu-operator-24-9-0",
		"template":         "gpu-operator-24-9-0",
		"releaseName":      "gpu-operator-24-9-0",
		"releaseNamespace": "gpu-operator",
		"values":           `{"driver":{"enabled":false}}`,
		"helm":             map[string]any{"wait": true, "timeout": "20m0s"},
		"provider":         map[string]any{"name": "ksm-projectsveltos", "config": nil},
		"labels": map[string]any{"workspaces.exalsius.ai/cluster-deployment": "colony-a-gpu",
			"workspaces.exalsius.ai/template": "gpu-operator-24-9-0", "workspaces.exalsius.ai/role": "spoofed"},
		"operator": map[string]any{"deliveryMode": "direct"},
	}
}

func withSecret(in map[string]any) map[string]any {
	in["valuesSecret"] = map[string]any{"name": "wsd-colony-a-gpu-jupyter-values", "values": secretValuesYAML}
	return in
}

func renderBundle(t *testing.T, g Gomega, bundle string, in map[string]any) *Output {
	t.Helper()
	out, err := builtinBundle(t, bundle).Render(Request{Purpose: Purpose(bundle), Namespace: testClusterNamespace, Input: in})
	g.Expect(err).NotTo(HaveOccurred())
	return out
}

func TestWorkspaceServiceSetWithoutSecret(t *testing.T) {
	g := NewWithT(t)
	out := renderBundle(t, g, WorkspaceServiceSetBundle, workspaceInput())
	g.Expect(kindNames(out)).To(Equal([]string{"ServiceSet/team-a/wsd-colony-a-gpu-jupyter"}))
	ss := out.Objects[0]
	g.Expect(ss.GetAPIVersion()).To(Equal("k0rdent.mirantis.com/v1beta1"))
	g.Expect(ss.GetLabels()).To(Equal(map[string]string{
		k0rdentv1beta1.StateManagementProviderAdapterLabel: k0rdentv1beta1.StateManagementProviderAdapterLabelValue,
		"workspaces.exalsius.ai/workspace":                 "jupyter",
		"workspaces.exalsius.ai/workspace-namespace":       "team-a",
		"app.kubernetes.io/managed-by":                     "apiary",
		"team":                                             "a",
	}))
	g.Expect(ss.GetAnnotations()).To(BeEmpty())
	g.Expect(ss.GetOwnerReferences()).To(BeEmpty())
	g.Expect(ss.Object["spec"]).To(Equal(map[string]any{
		"cluster":  "colony-a-gpu",
		"provider": map[string]any{"name": "ksm-projectsveltos", "config": map[string]any{"priority": int64(200)}},
		"services": []any{map[string]any{
			"name":        "wsd-colony-a-gpu-jupyter",
			"namespace":   "ws-jupyter",
			"template":    "jupyter-1-0-0",
			"values":      `{"_exalsius":{"resources":{"replicas":1}},"image":"jupyter:1"}`,
			"helmOptions": map[string]any{"wait": true, "timeout": "15m0s"},
		}},
	}))
	g.Expect(serviceSetProblems(t, ss)).To(BeEmpty())
}

func TestWorkspaceServiceSetWithSecret(t *testing.T) {
	g := NewWithT(t)
	out := renderBundle(t, g, WorkspaceServiceSetBundle, withSecret(workspaceInput()))
	g.Expect(kindNames(out)).To(Equal([]string{
		"Secret/team-a/wsd-colony-a-gpu-jupyter-values", "ServiceSet/team-a/wsd-colony-a-gpu-jupyter"}))
	secret, ss := out.Objects[0], out.Objects[1]
	g.Expect(secret.GetAPIVersion()).To(Equal("v1"))
	g.Expect(secret.GetLabels()).To(Equal(ss.GetLabels()))
	g.Expect(secret.Object).To(HaveKeyWithValue("type", "Opaque"))
	g.Expect(secret.Object).NotTo(HaveKey("stringData"))
	g.Expect(secret.Object["data"]).To(HaveLen(1))
	data, found, err := unstructured.NestedString(secret.Object, "data", "values.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found).To(BeTrue())
	decoded, err := base64.StdEncoding.DecodeString(data)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(decoded)).To(Equal(secretValuesYAML))

	services, _, _ := unstructured.NestedSlice(ss.Object, "spec", "services")
	g.Expect(services).To(HaveLen(1))
	g.Expect(services[0]).To(HaveKeyWithValue("valuesFrom",
		[]any{map[string]any{"kind": "Secret", "name": "wsd-colony-a-gpu-jupyter-values"}}))
	g.Expect(services[0]).To(HaveKeyWithValue("values", workspaceInput()["values"]))
	g.Expect(serviceSetProblems(t, ss)).To(BeEmpty())

	// The secret values are in the Secret's data and nowhere else.
	g.Expect(string(out.YAML())).NotTo(ContainSubstring(secretToken))
	others := 0
	for _, doc := range strings.Split(string(out.YAML()), "---\n") {
		obj := map[string]any{}
		g.Expect(yaml.Unmarshal([]byte(doc), &obj)).To(Succeed())
		if obj["kind"] != "Secret" {
			others++
			g.Expect(doc).NotTo(ContainSubstring(data), "the base64 values leak into %s", obj["kind"])
		}
	}
	g.Expect(others).To(Equal(1))
}

func TestWorkspaceServiceSetVariants(t *testing.T) {
	longName := strings.Repeat("w", 60) + ".example"
	tests := []struct {
		name   string
		edit   func(in map[string]any)
		values map[string]any
		check  func(g Gomega, ss *unstructured.Unstructured)
	}{{
		name: "no values, no provider, no labels",
		edit: func(in map[string]any) { in["values"] = ""; delete(in, "provider"); delete(in, "labels") },
		check: func(g Gomega, ss *unstructured.Unstructured) {
			g.Expect(ss.Object["spec"]).To(HaveKeyWithValue("provider", map[string]any{"name": "ksm-projectsveltos"}))
			g.Expect(svc(ss.Object)).NotTo(HaveKey("values"))
			g.Expect(ss.GetLabels()).NotTo(HaveKey("team"))
		},
	}, {
		name: "other provider, empty config",
		edit: func(in map[string]any) { in["provider"] = map[string]any{"name": "my-smp", "config": map[string]any{}} },
		check: func(g Gomega, ss *unstructured.Unstructured) {
			g.Expect(ss.Object["spec"]).To(HaveKeyWithValue("provider", map[string]any{"name": "my-smp"}))
		},
	}, {
		name: "the bundle's labels win over input and values labels",
		edit: func(in map[string]any) {
			in["labels"] = map[string]any{"app.kubernetes.io/managed-by": "me", "ksm.k0rdent.mirantis.com/adapter": "x", "team": "a"}
		},
		values: map[string]any{"labels": map[string]any{"team": "values", "tier": "gold"}, "annotations": map[string]any{"note": "n"}},
		check: func(g Gomega, ss *unstructured.Unstructured) {
			g.Expect(ss.GetLabels()).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "apiary"))
			g.Expect(ss.GetLabels()).To(HaveKeyWithValue("ksm.k0rdent.mirantis.com/adapter", "kcm-controller-manager"))
			g.Expect(ss.GetLabels()).To(HaveKeyWithValue("team", "a"))
			g.Expect(ss.GetLabels()).To(HaveKeyWithValue("tier", "gold"))
			g.Expect(ss.GetAnnotations()).To(Equal(map[string]string{"note": "n"}))
		},
	}, {
		name:   "values helmOptions; wait and timeout come from the input",
		edit:   func(in map[string]any) { in["helm"] = map[string]any{"wait": false, "timeout": "1h30m0s"} },
		values: map[string]any{"helmOptions": map[string]any{"atomic": true, "installOptions": map[string]any{"replace": false}}},
		check: func(g Gomega, ss *unstructured.Unstructured) {
			opts, _, _ := unstructured.NestedMap(svc(ss.Object), "helmOptions")
			g.Expect(opts).To(Equal(map[string]any{"wait": false, "timeout": "1h30m0s", "atomic": true,
				"installOptions": map[string]any{"replace": false}}))
		},
	}, {
		name: "a long workspace name is bounded in its label like the controller bounds names",
		edit: func(in map[string]any) { in["workspace"].(map[string]any)["name"] = longName },
		check: func(g Gomega, ss *unstructured.Unstructured) {
			g.Expect(ss.GetLabels()).To(HaveKeyWithValue("workspaces.exalsius.ai/workspace", naming.Bounded(longName)))
		},
	}}
	b := builtinBundle(t, WorkspaceServiceSetBundle)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			in := workspaceInput()
			tt.edit(in)
			out, err := b.Render(Request{Purpose: PurposeWorkspaceServiceSet, Namespace: testClusterNamespace, Input: in, Values: tt.values})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(out.Objects).To(HaveLen(1))
			tt.check(g, out.Objects[0])
			g.Expect(serviceSetProblems(t, out.Objects[0])).To(BeEmpty())
		})
	}
}

func TestWorkspacePrerequisite(t *testing.T) {
	g := NewWithT(t)
	out := renderBundle(t, g, workspacePrerequisiteBundle, prerequisiteInput())
	g.Expect(kindNames(out)).To(Equal([]string{"ServiceSet/team-a/wsprereq-colony-a-gpu-gpu-operator-24-9-0"}))
	ss := out.Objects[0]
	g.Expect(ss.GetLabels()).To(Equal(map[string]string{
		k0rdentv1beta1.StateManagementProviderAdapterLabel: k0rdentv1beta1.StateManagementProviderAdapterLabelValue,
		"workspaces.exalsius.ai/role":                      "prerequisite",
		"workspaces.exalsius.ai/cluster-deployment":        "colony-a-gpu",
		"workspaces.exalsius.ai/template":                  "gpu-operator-24-9-0",
		"app.kubernetes.io/managed-by":                     "apiary",
	}))
	g.Expect(ss.Object["spec"]).To(Equal(map[string]any{
		"cluster":  "colony-a-gpu",
		"provider": map[string]any{"name": "ksm-projectsveltos"},
		"services": []any{map[string]any{
			"name":      "gpu-operator-24-9-0",
			"namespace": "gpu-operator",
			"template":  "gpu-operator-24-9-0",
			"values":    `{"driver":{"enabled":false}}`,
			"helmOptions": map[string]any{"wait": true, "timeout": "20m0s",
				"installOptions": map[string]any{"createNamespace": true}},
		}},
	}))
	g.Expect(serviceSetProblems(t, ss)).To(BeEmpty())

	// Values add Helm options, but createNamespace stays true.
	in := prerequisiteInput()
	in["values"] = ""
	out, err := builtinBundle(t, workspacePrerequisiteBundle).Render(Request{Purpose: PurposeWorkspacePrerequisite, Namespace: testClusterNamespace, Input: in, Values: map[string]any{
		"helmOptions": map[string]any{"atomic": true, "installOptions": map[string]any{"createNamespace": false, "takeOwnership": true}},
	}})
	g.Expect(err).NotTo(HaveOccurred())
	service := svc(out.Objects[0].Object)
	g.Expect(service).NotTo(HaveKey("values"))
	g.Expect(service["helmOptions"]).To(Equal(map[string]any{"wait": true, "timeout": "20m0s", "atomic": true,
		"installOptions": map[string]any{"createNamespace": true, "takeOwnership": true}}))
	g.Expect(serviceSetProblems(t, out.Objects[0])).To(BeEmpty())
}

func TestWorkspaceBundlesRefuseBadInput(t *testing.T) {
	drop := func(path ...string) func(map[string]any) {
		return func(in map[string]any) {
			m := in
			for _, p := range path[:len(path)-1] {
				m = m[p].(map[string]any)
			}
			delete(m, path[len(path)-1])
		}
	}
	set := func(key string, v any) func(map[string]any) { return func(in map[string]any) { in[key] = v } }
	tests := []struct {
		bundle  string
		name    string
		edit    func(map[string]any)
		values  map[string]any
		wantErr string
	}{
		{WorkspaceServiceSetBundle, "no serviceTemplate", drop("serviceTemplate"), nil, "input serviceTemplate is required"},
		{WorkspaceServiceSetBundle, "no workspace", drop("workspace"), nil, "input workspace is required"},
		{WorkspaceServiceSetBundle, "no cluster namespace", drop("cluster", "namespace"), nil, "input cluster.namespace is required"},
		{WorkspaceServiceSetBundle, "no releaseNamespace", drop("releaseNamespace"), nil, "input releaseNamespace is required"},
		{WorkspaceServiceSetBundle, "no helm.timeout", drop("helm", "timeout"), nil, "input helm.timeout is required"},
		{WorkspaceServiceSetBundle, "no helm.wait", drop("helm", "wait"), nil, "input helm.wait is required"},
		{WorkspaceServiceSetBundle, "bad timeout", set("helm", map[string]any{"wait": true, "timeout": "15 minutes"}), nil, "input helm.timeout must be a Go duration"},
		{WorkspaceServiceSetBundle, "wait is not a bool", set("helm", map[string]any{"wait": "yes", "timeout": "1m"}), nil, "input helm.wait must be a boolean"},
		{WorkspaceServiceSetBundle, "values is not a string", set("values", map[string]any{"a": 1}), nil, "input values must be a string"},
		{WorkspaceServiceSetBundle, "serviceSetName too long", set("serviceSetName", strings.Repeat("s", 64)), nil, "at most 63 characters"},
		{WorkspaceServiceSetBundle, "valuesSecret without name", set("valuesSecret", map[string]any{"values": secretValuesYAML}), nil, "input valuesSecret.name is required"},
		{WorkspaceServiceSetBundle, "valuesSecret without values", set("valuesSecret", map[string]any{"name": "s"}), nil, "input valuesSecret.values is required"},
		{WorkspaceServiceSetBundle, "unknown value", nil, map[string]any{"helmOption": map[string]any{}}, "'helmOption' not allowed"},
		{workspacePrerequisiteBundle, "no template", drop("template"), nil, "input template is required"},
		{workspacePrerequisiteBundle, "no cluster name", drop("cluster", "name"), nil, "input cluster.name is required"},
		{workspacePrerequisiteBundle, "no releaseName", drop("releaseName"), nil, "input releaseName is required"},
		{workspacePrerequisiteBundle, "provider is a string", set("provider", "sveltos"), nil, "input provider must be an object"},
		{workspacePrerequisiteBundle, "unknown helm option", nil, map[string]any{"helmOptions": map[string]any{"wiat": true}}, "'wiat' not allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.bundle+"/"+tt.name, func(t *testing.T) {
			g := NewWithT(t)
			in := workspaceInput()
			if tt.bundle == workspacePrerequisiteBundle {
				in = prerequisiteInput()
			}
			if tt.edit != nil {
				tt.edit(in)
			}
			_, err := builtinBundle(t, tt.bundle).Render(Request{Purpose: Purpose(tt.bundle), Namespace: testClusterNamespace, Input: in, Values: tt.values})
			rerr := asRenderError(g, err)
			g.Expect(rerr.Bundle).To(Equal(tt.bundle))
			g.Expect(err.Error()).To(HavePrefix(`bundle "` + tt.bundle + `": `))
			g.Expect(err.Error()).To(ContainSubstring(tt.wantErr))
			g.Expect(err.Error()).NotTo(ContainSubstring(secretToken))
			if tt.values == nil {
				g.Expect(rerr.File).To(Equal("templates/serviceset.yaml"))
				src, err := os.ReadFile("../../templates/" + tt.bundle + "/templates/serviceset.yaml")
				g.Expect(err).NotTo(HaveOccurred())
				lines := strings.Split(string(src), "\n")
				g.Expect(rerr.Line).To(BeNumerically(">", 0))
				if strings.Contains(string(src), tt.wantErr) {
					g.Expect(lines[rerr.Line-1]).To(ContainSubstring(tt.wantErr))
				}
			}
		})
	}
}

func TestWorkspaceBundlesAreByteStable(t *testing.T) {
	for _, tc := range []struct {
		bundle string
		input  func() map[string]any
	}{
		{WorkspaceServiceSetBundle, func() map[string]any { return withSecret(workspaceInput()) }},
		{workspacePrerequisiteBundle, prerequisiteInput},
	} {
		t.Run(tc.bundle, func(t *testing.T) {
			g := NewWithT(t)
			first := renderBundle(t, g, tc.bundle, tc.input()).YAML()
			g.Expect(first).NotTo(BeEmpty())
			for range 5 {
				g.Expect(renderBundle(t, g, tc.bundle, tc.input()).YAML()).To(Equal(first))
			}
		})
	}
}

type crdSchema struct {
	structural *structuralschema.Structural
	validator  crdvalidation.SchemaValidator
}
