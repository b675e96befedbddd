package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
)

const configMapTemplate = `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}
  namespace: {{ .Release.Namespace }}
data:
  input: {{ toJson .Input | quote }}
  values: {{ toJson .Values | quote }}
`

func TestRenderIsByteStable(t *testing.T) {
	g := NewWithT(t)
	b := loadTest(t, map[string]string{
		"values.yaml":           "a: {x: 1, y: [1, 2]}\nb: text\n",
		"templates__cm.yaml":    configMapTemplate,
		"templates__multi.yaml": "{{ range $k, $v := .Input.items }}---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: {{ $k }}\nstringData: {{ toYaml $v | nindent 2 }}\n{{ end }}",
	})
	// The same input built with keys inserted in different orders, and
	// decoded from differently ordered JSON.
	items := []string{"zeta", "alpha", "mu", "beta", "omega"}
	build := func(i int) Request {
		input := map[string]any{}
		list := map[string]any{}
		for j := range items {
			name := items[(i+j)%len(items)]
			list[name] = map[string]any{"k1": name, "k2": j - j + 7, "k3": []any{"x", "y"}}
		}
		input["items"] = list
		raw := fmt.Sprintf(`{"b": "text", "extra": {"p": %d, "q": true}}`, 3)
		if i%2 == 1 {
			raw = `{"extra": {"q": true, "p": 3}, "b": "text"}`
		}
		values := map[string]any{}
		g.Expect(json.Unmarshal([]byte(raw), &values)).To(Succeed())
		return Request{ReleaseName: "r", Namespace: "ns", Values: values, Input: input}
	}
	first, err := renderAny(b, build(0))
	g.Expect(err).NotTo(HaveOccurred())
	want := first.YAML()
	g.Expect(first.Objects).To(HaveLen(6))
	for i := 1; i < 50; i++ {
		out, err := renderAny(b, build(i))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out.YAML()).To(Equal(want), "render %d", i)
		g.Expect(out.Digest()).To(Equal(first.Digest()))
	}
	g.Expect(first.Digest()).To(MatchRegexp(`^sha256:[0-9a-f]{64}$`))
}

func TestRenderSortsObjects(t *testing.T) {
	g := NewWithT(t)
	obj := func(apiVersion, kind, ns, name string) string {
		return fmt.Sprintf("---\napiVersion: %s\nkind: %s\nmetadata:\n  name: %q\n  namespace: %q\n", apiVersion, kind, name, ns)
	}
	b := loadTest(t, map[string]string{
		"templates/a.yaml": obj("v1", "Secret", "b", "z") + obj("apps/v1", "Deployment", "a", "d"),
		"templates/b.yaml": obj("v1", "ConfigMap", "b", "a") + obj("v1", "Secret", "a", "z"),
		"templates/c.yaml": obj("k0rdent.mirantis.com/v1beta1", "ClusterDeployment", "a", "c") + obj("v1", "Secret", "a", "y"),
	})
	out, err := renderAny(b, Request{})
	g.Expect(err).NotTo(HaveOccurred())
	// Core group ("") first, then by kind, namespace and name.
	g.Expect(kindNames(out)).To(Equal([]string{
		"ConfigMap/b/a", "Secret/a/y", "Secret/a/z", "Secret/b/z",
		"Deployment/a/d", "ClusterDeployment/a/c",
	}))
	docs := strings.Split(string(out.YAML()), "---\n")
	g.Expect(docs).To(HaveLen(6))
	g.Expect(docs[0]).To(HavePrefix("apiVersion: v1\nkind: ConfigMap\n"))
}

func TestRenderSeesDocumentedData(t *testing.T) {
	g := NewWithT(t)
	b := loadTest(t, map[string]string{
		"values.yaml":          "greeting: hello\nnested: {keep: 1, drop: 2}\n",
		"files__motd.txt":      "welcome",
		"templates___h.tpl":    `{{ define "test.name" }}{{ .Release.Name }}-{{ .Input.suffix }}{{ end }}`,
		"templates__NOTES.txt": "apiVersion: v1\nkind: Broken\n",
		"templates__cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "test.name" . }}
data:
  greeting: {{ .Values.greeting | quote }}
  nested: {{ toJson .Values.nested | quote }}
  release: {{ toJson .Release | quote }}
  chart: {{ .Chart.Name }}-{{ .Chart.Version }}
  kube: {{ .Capabilities.KubeVersion.Major | quote }}
  file: {{ .Files.Get "files/motd.txt" | quote }}
  tpl: {{ tpl "{{ .Input.suffix | upper }}" . }}
`,
	})
	out, err := renderAny(b, Request{
		ReleaseName: "rel", Namespace: "ns",
		Values: map[string]any{"nested": map[string]any{"drop": nil, "add": 3}},
		Input:  map[string]any{"suffix": "x"},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.Objects).To(HaveLen(1))
	cm := out.Objects[0]
	g.Expect(cm.GetName()).To(Equal("rel-x"))
	data := cm.Object["data"].(map[string]any)
	g.Expect(data["greeting"]).To(Equal("hello"))
	g.Expect(data["nested"]).To(MatchJSON(`{"keep": 1, "add": 3}`))
	g.Expect(data["release"]).To(MatchJSON(`{"Name": "rel", "Namespace": "ns", "IsInstall": true, "IsUpgrade": false, "Revision": 1, "Service": "Apiary"}`))
	g.Expect(data["chart"]).To(Equal("test-0.1.0"))
	g.Expect(data["kube"]).NotTo(BeEmpty())
	g.Expect(data["file"]).To(Equal("welcome"))
	g.Expect(data["tpl"]).To(Equal("X"))
}

func TestRenderDoesNotLeakBetweenRenders(t *testing.T) {
	g := NewWithT(t)
	b := loadTest(t, map[string]string{
		"values.yaml": "list: {a: 1}\n",
		"templates/cm.yaml": `{{ $_ := set .Values.list "b" 2 }}{{ $_ := set .Input "seen" true }}apiVersion: v1
kind: ConfigMap
metadata:
  name: cm
data:
  list: {{ toJson .Values.list | quote }}
`,
	})
	input := map[string]any{"x": "y"}
	for range 2 {
		out, err := renderAny(b, Request{Input: input})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(out.Objects[0].Object["data"]).To(HaveKeyWithValue("list", MatchJSON(`{"a":1,"b":2}`)))
	}
	g.Expect(input).To(Equal(map[string]any{"x": "y"}))
}

func TestRenderConcurrently(t *testing.T) {
	b := loadTest(t, map[string]string{"templates/cm.yaml": configMapTemplate})
	want, err := renderAny(b, Request{ReleaseName: "r", Input: map[string]any{"n": 1}})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := renderAny(b, Request{ReleaseName: "r", Input: map[string]any{"n": 1}})
			if err != nil || !bytes.Equal(out.YAML(), want.YAML()) {
				t.Errorf("render %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
}

func TestRenderErrors(t *testing.T) {
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n"
	tests := []struct {
		name     string
		files    map[string]string
		req      Request
		reason   string
		file     string
		line     int
		slack    int
		contains string
	}{{
		// The engine's errors (see package engine) keep their file and line.
		name: "nil value in an included helper names the helper",
		files: map[string]string{
			"templates/_helpers.tpl": "{{/* helpers */}}\n{{ define \"x\" }}\n{{ .Values.a.b }}\n{{ end }}\n",
			"templates/cm.yaml":      "\n{{ include \"x\" . }}\n",
		},
		reason:   ReasonTemplate,
		file:     "templates/_helpers.tpl",
		line:     3,
		contains: "nil pointer",
	}, {
		name:     "fail",
		files:    map[string]string{"templates/cm.yaml": "\n\n{{ fail \"size must be small, medium or large\" }}\n"},
		reason:   ReasonTemplate,
		file:     "templates/cm.yaml",
		line:     3,
		contains: "size must be small, medium or large",
	}, {
		name:     "invalid YAML",
		files:    map[string]string{"templates/cm.yaml": cm + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n data: x\n"},
		reason:   ReasonOutput,
		file:     "templates/cm.yaml",
		line:     10,
		slack:    1, // YAML parsers may report the line where the context started
		contains: "not valid YAML",
	}, {
		name:     "duplicate key",
		files:    map[string]string{"templates/cm.yaml": cm + "kind: Secret\n"},
		reason:   ReasonOutput,
		file:     "templates/cm.yaml",
		contains: `"kind" already set`,
	}, {
		name:     "missing apiVersion",
		files:    map[string]string{"templates/cm.yaml": "# comment\n\nkind: ConfigMap\nmetadata:\n  name: cm\n"},
		reason:   ReasonOutput,
		file:     "templates/cm.yaml",
		line:     3,
		contains: "no apiVersion",
	}, {
		name:     "missing kind",
		files:    map[string]string{"templates/cm.yaml": "apiVersion: v1\nmetadata:\n  name: cm\n"},
		reason:   ReasonOutput,
		file:     "templates/cm.yaml",
		line:     1,
		contains: "no kind",
	}, {
		name:     "missing name",
		files:    map[string]string{"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: x-\n"},
		reason:   ReasonOutput,
		contains: "ConfigMap has no metadata.name",
	}, {
		name:     "name that is not a string",
		files:    map[string]string{"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yes\n"},
		reason:   ReasonOutput,
		contains: "ConfigMap: metadata.name is a boolean, not a string (quote it)",
	}, {
		name:     "a list is not an object",
		files:    map[string]string{"templates/cm.yaml": "- a\n- b\n"},
		reason:   ReasonOutput,
		contains: "a document is a list, not a Kubernetes object",
	}, {
		name:     "label that is not a string",
		files:    map[string]string{"templates/cm.yaml": cm + "  labels:\n    version: 1.0\n"},
		reason:   ReasonOutput,
		contains: `metadata.labels["version"] is a number, not a string`,
	}, {
		name: "duplicate object",
		files: map[string]string{
			"templates/a.yaml": cm,
			"templates/b.yaml": strings.Replace(cm, "apiVersion: v1", "apiVersion: v1\n", 1),
		},
		reason:   ReasonOutput,
		file:     "templates/b.yaml",
		contains: "ConfigMap cm is rendered twice (also by templates/a.yaml)",
	}, {
		name:     "schema",
		files:    map[string]string{"values.schema.json": `{"type": "object", "properties": {"size": {"enum": ["small", "large"]}}}`, "templates/cm.yaml": cm},
		req:      Request{Values: map[string]any{"size": "huge"}},
		reason:   ReasonSchema,
		file:     "values.schema.json",
		contains: "values do not match values.schema.json: at /size: value must be one of",
	}, {
		name:     "values that are not JSON",
		files:    map[string]string{"templates/cm.yaml": cm},
		req:      Request{Values: map[string]any{"f": func() {}}},
		reason:   ReasonInput,
		contains: "values",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := renderAny(loadTest(t, tt.files), tt.req)
			rerr := asRenderError(g, err)
			t.Log(err)
			g.Expect(rerr.Bundle).To(Equal("test"))
			g.Expect(rerr.Reason).To(Equal(tt.reason))
			if tt.file != "" {
				g.Expect(rerr.File).To(Equal(tt.file))
			}
			if tt.line != 0 {
				g.Expect(rerr.Line).To(BeNumerically(">=", tt.line-tt.slack))
				g.Expect(rerr.Line).To(BeNumerically("<=", tt.line))
			}
			g.Expect(err.Error()).To(ContainSubstring(tt.contains))
			g.Expect(err.Error()).To(HavePrefix(`bundle "test": `))
			g.Expect(err.Error()).NotTo(ContainSubstring("\n"))
			g.Expect(err.Error()).NotTo(ContainSubstring("HELM_ERR"))

		})
	}
}

func TestRenderDropsEmptyDocuments(t *testing.T) {
	g := NewWithT(t)
	b := loadTest(t, map[string]string{
		"templates/cm.yaml":    "---\n# nothing\n---\n\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n---\n",
		"templates/empty.yaml": "{{ if .Values.never }}apiVersion: v1{{ end }}",
	})
	out, err := renderAny(b, Request{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kindNames(out)).To(Equal([]string{"ConfigMap//cm"}))
	g.Expect((&Output{}).YAML()).To(BeEmpty())
}
