package engine

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
)

// A template that does not compile is refused with its file and line.
func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name      string
		templates map[string]string
		file      string
		line      int
		contains  string
	}{{
		name:      "syntax error",
		templates: map[string]string{"templates/cm.yaml": "a: 1\n\n{{ end }}\nb: 2\n"},
		file:      "templates/cm.yaml", line: 3, contains: "unexpected {{end}}",
	}, {
		name:      "unknown function",
		templates: map[string]string{"templates/cm.yaml": "a: 1\n{{ nope 1 }}\n"},
		file:      "templates/cm.yaml", line: 2, contains: `function "nope" not defined`,
	}, {
		name:      "lookup",
		templates: map[string]string{"templates/cm.yaml": "a: 1\n{{- $s := lookup \"v1\" \"Secret\" \"ns\" \"s\" }}\n"},
		file:      "templates/cm.yaml", line: 2, contains: `function "lookup" is not allowed: bundles cannot read the cluster`,
	}, {
		name:      "now, in a helper",
		templates: map[string]string{"templates/_h.tpl": "{{ define \"x\" }}\n{{ if true }}{{ now | date \"2006\" }}{{ end }}\n{{ end }}"},
		file:      "templates/_h.tpl", line: 2, contains: `function "now" is not allowed: it changes at every render`,
	}, {
		name:      "random password",
		templates: map[string]string{"templates/s.yaml": "{{ with .Values }}\n{{ range list 1 }}{{ randAlphaNum 16 }}{{ end }}{{ end }}"},
		file:      "templates/s.yaml", line: 2, contains: `"randAlphaNum" is not allowed`,
	}, {
		name:      "environment",
		templates: map[string]string{"templates/s.yaml": `{{ env "HOME" }}`},
		file:      "templates/s.yaml", line: 1, contains: `function "env" not defined`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := Compile(testChart(tt.templates, nil))
			e := asError(g, err)
			t.Log(err)
			g.Expect(e.File).To(Equal(tt.file))
			g.Expect(e.Line).To(Equal(tt.line))
			g.Expect(err.Error()).To(HavePrefix(e.File + ":"))
			g.Expect(err.Error()).To(ContainSubstring(tt.contains))
		})
	}
}

// A template that fails while rendering is named by its innermost file and
// line: an included helper's, not the caller's.
func TestExecuteErrorsNameFileAndLine(t *testing.T) {
	tests := []struct {
		name      string
		templates map[string]string
		values    map[string]any
		file      string
		line      int
		contains  string
	}{{
		name:      "nil value in a template",
		templates: map[string]string{"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Values.a.b.c }}\n"},
		file:      "templates/cm.yaml", line: 4, contains: "nil pointer evaluating",
	}, {
		name: "nil value in an included helper names the helper",
		templates: map[string]string{
			"templates/_helpers.tpl": "{{/* helpers */}}\n{{ define \"x\" }}\n{{ .Values.a.b }}\n{{ end }}\n",
			"templates/cm.yaml":      "\n{{ include \"x\" . }}\n",
		},
		file: "templates/_helpers.tpl", line: 3, contains: "nil pointer",
	}, {
		name:      "lookup through tpl",
		templates: map[string]string{"templates/cm.yaml": `{{ tpl .Values.t . }}`},
		values:    map[string]any{"t": `{{ lookup "v1" "Secret" "ns" "s" }}`},
		file:      "templates/cm.yaml", line: 1, contains: `function "lookup" is not allowed: bundles cannot read the cluster`,
	}, {
		name:      "tpl text that does not parse",
		templates: map[string]string{"templates/cm.yaml": "\n\n{{ tpl .Values.t . }}"},
		values:    map[string]any{"t": `{{ if }}`},
		file:      "templates/cm.yaml", line: 3, contains: "missing value for if",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := run(t, tt.templates, testLimits(), map[string]any{"Values": tt.values})
			e := asError(g, err)
			t.Log(err)
			g.Expect(e.File).To(Equal(tt.file))
			g.Expect(e.Line).To(Equal(tt.line))
			g.Expect(err.Error()).To(ContainSubstring(tt.contains))
			g.Expect(err.Error()).NotTo(ContainSubstring("test/templates/"), "paths are the chart's")
			g.Expect(errors.Is(err, ErrBudgetExceeded) || errors.Is(err, ErrTimeout)).To(BeFalse())
		})
	}
}

// The message of required and fail is the cause, as is.
func TestExecuteFailIsShownAsIs(t *testing.T) {
	for name, tpl := range map[string]string{
		"fail":     "\n\n{{ fail \"size must be small, medium or large\" }}\n",
		"required": "\n\n{{ required \"size must be small, medium or large\" .Values.size }}\n",
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := run(t, map[string]string{"templates/cm.yaml": tpl}, testLimits(), map[string]any{"Values": map[string]any{}})
			e := asError(g, err)
			g.Expect(e.Line).To(Equal(3))
			g.Expect(e.Err).To(MatchError("size must be small, medium or large"))
			g.Expect(err).To(MatchError("templates/cm.yaml:3: size must be small, medium or large"))
		})
	}
}
