package render

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestLoadFilesFromConfigMapKeys(t *testing.T) {
	g := NewWithT(t)
	// The data of a ConfigMap: "/" is written "__" in keys.
	b := loadTest(t, map[string]string{
		"values.yaml":             "name: from-configmap\n",
		"templates___helpers.tpl": `{{ define "n" }}{{ .Values.name }}{{ end }}`,
		"templates__sub__cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ include \"n\" . }}\n",
	})
	out, err := renderAny(b, Request{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kindNames(out)).To(Equal([]string{"ConfigMap//from-configmap"}))
}

func TestLoadFilesErrors(t *testing.T) {
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n"
	tests := []struct {
		name     string
		files    map[string]string
		reason   string
		file     string
		line     int
		contains string
	}{{
		name:     "no Chart.yaml",
		files:    map[string]string{"Chart.yaml": "", "templates__cm.yaml": cm},
		reason:   ReasonBundle,
		file:     "Chart.yaml",
		contains: "Chart.yaml",
	}, {
		name:     "key escaping the bundle",
		files:    map[string]string{"templates__..__..__x.yaml": cm},
		reason:   ReasonBundle,
		contains: "invalid path",
	}, {
		name:     "empty path segment",
		files:    map[string]string{"templates____cm.yaml": cm},
		reason:   ReasonBundle,
		contains: "invalid path",
	}, {
		name:     "same file twice",
		files:    map[string]string{"templates__cm.yaml": cm, "templates/cm.yaml": cm},
		reason:   ReasonBundle,
		file:     "templates/cm.yaml",
		contains: "given twice",
	}, {
		name:     "subchart",
		files:    map[string]string{"charts__sub__Chart.yaml": testChart},
		reason:   ReasonBundle,
		contains: "subcharts",
	}, {
		name:     "dependencies",
		files:    map[string]string{"Chart.yaml": testChart + "dependencies:\n- name: x\n  version: 1.0.0\n  repository: https://example.com\n"},
		reason:   ReasonBundle,
		contains: "dependencies",
	}, {
		name:     "invalid values.yaml",
		files:    map[string]string{"values.yaml": "a: [1\n"},
		reason:   ReasonBundle,
		file:     "values.yaml",
		contains: "values.yaml",
	}, {
		name:     "values.yaml against its schema",
		files:    map[string]string{"values.yaml": "size: 3\n", "values.schema.json": `{"properties": {"size": {"type": "string"}}}`},
		reason:   ReasonBundle,
		file:     "values.yaml",
		contains: "does not match values.schema.json: at /size: got number, want string",
	}, {
		name:     "schema that is not JSON",
		files:    map[string]string{"values.schema.json": `{"type": `},
		reason:   ReasonBundle,
		file:     "values.schema.json",
		contains: "not valid JSON",
	}, {
		name:     "schema referencing a URL",
		files:    map[string]string{"values.schema.json": `{"properties": {"a": {"$ref": "https://example.com/s.json"}}}`},
		reason:   ReasonBundle,
		file:     "values.schema.json",
		contains: "only references inside values.schema.json",
	}, {
		name:     "schema referencing a local file",
		files:    map[string]string{"values.schema.json": `{"$ref": "file:///etc/passwd"}`},
		reason:   ReasonBundle,
		file:     "values.schema.json",
		contains: "only references inside values.schema.json",
	}, {
		name:     "template syntax error",
		files:    map[string]string{"templates__cm.yaml": "a: 1\n\n{{ end }}\nb: 2\n"},
		reason:   ReasonTemplate,
		file:     "templates/cm.yaml",
		line:     3,
		contains: "unexpected {{end}}",
	}, {
		name:     "lookup",
		files:    map[string]string{"templates__cm.yaml": "a: 1\n{{- $s := lookup \"v1\" \"Secret\" \"ns\" \"s\" }}\n"},
		reason:   ReasonTemplate,
		file:     "templates/cm.yaml",
		line:     2,
		contains: `function "lookup" is not allowed: bundles cannot read the cluster`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := loadTestErr(tt.files)
			rerr := asRenderError(g, err)
			t.Log(err)
			g.Expect(rerr.Reason).To(Equal(tt.reason))
			if tt.file != "" {
				g.Expect(rerr.File).To(Equal(tt.file))
			}
			if tt.line != 0 {
				g.Expect(rerr.Line).To(Equal(tt.line))
			}
			g.Expect(err.Error()).To(ContainSubstring(tt.contains))
			g.Expect(err.Error()).To(HavePrefix(`bundle "test": `))
		})
	}
}

func TestConfigMapKeys(t *testing.T) {
	tests := []struct {
		path, key string
	}{
		{"Chart.yaml", "Chart.yaml"},
		{"templates/cd.yaml", "templates__cd.yaml"},
		{"templates/_helpers.tpl", "templates___helpers.tpl"},
		{"files/a/b.txt", "files__a__b.txt"},
	}
	for _, tt := range tests {
		g := NewWithT(t)
		key, err := EncodeConfigMapKey(tt.path)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(key).To(Equal(tt.key))
		p, err := DecodeConfigMapKey(tt.key)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(p).To(Equal(tt.path))
	}
	for _, bad := range []string{"a_/b", "a__b/c", "../x", "/abs"} {
		_, err := EncodeConfigMapKey(bad)
		NewWithT(t).Expect(err).To(HaveOccurred(), bad)
	}
	for _, bad := range []string{"", "__x", "x__", "a____b", "a b", "..__x", "é"} {
		_, err := DecodeConfigMapKey(bad)
		NewWithT(t).Expect(err).To(HaveOccurred(), bad)
	}
}

func TestMergeValues(t *testing.T) {
	tests := []struct {
		name              string
		defaults, over, w map[string]any
	}{
		{"override wins", map[string]any{"a": int64(1)}, map[string]any{"a": int64(2)}, map[string]any{"a": int64(2)}},
		{"maps merge", map[string]any{"m": map[string]any{"x": int64(1)}}, map[string]any{"m": map[string]any{"y": int64(2)}},
			map[string]any{"m": map[string]any{"x": int64(1), "y": int64(2)}}},
		{"lists replace", map[string]any{"l": []any{int64(1), int64(2)}}, map[string]any{"l": []any{int64(3)}}, map[string]any{"l": []any{int64(3)}}},
		{"null removes", map[string]any{"a": int64(1), "m": map[string]any{"x": int64(1)}}, map[string]any{"a": nil, "m": map[string]any{"x": nil}},
			map[string]any{"m": map[string]any{}}},
		{"null inside a new map is dropped", nil, map[string]any{"m": map[string]any{"x": nil, "y": "z"}}, map[string]any{"m": map[string]any{"y": "z"}}},
		{"a map replaces a scalar", map[string]any{"a": "s"}, map[string]any{"a": map[string]any{"k": "v"}}, map[string]any{"a": map[string]any{"k": "v"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			before := deepCopy(tt.defaults)
			g.Expect(MergeValues(tt.defaults, tt.over)).To(Equal(tt.w))
			if tt.defaults != nil {
				g.Expect(tt.defaults).To(Equal(before))
			}
		})
	}
}
