package render

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// configMaps is a template of n ConfigMaps in team-a.
const configMaps = "{{ range $i := %s }}---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{{ $i }}\n  namespace: team-a\n{{ end }}"

// Each hostile template is stopped with its own error, soon, and having
// allocated a bounded amount of memory.
func TestRenderStopsRunawayTemplates(t *testing.T) {
	cm := object("v1", "ConfigMap", "team-a", "c")
	tests := []struct {
		name   string
		tpl    string
		values map[string]any
		limits *Limits
		reason string
		want   error
		detail string
	}{{
		name: "a list of 100 million numbers", tpl: `{{ range $i := until 100000000 }}x{{ end }}`,
		reason: ReasonLimit, want: ErrBudgetExceeded, detail: "until would produce about 8000000",
	}, {
		name: "a loop of 100 billion iterations", tpl: `{{ range $i := 100000000000 }}{{ end }}`,
		reason: ReasonLimit, want: ErrBudgetExceeded, detail: "more than 250000 steps",
	}, {
		name: "a loop that outlives the timeout", tpl: `{{ range $i := 100000000000 }}{{ end }}`,
		limits: &Limits{Timeout: 100 * time.Millisecond, MaxSteps: 1 << 60},
		reason: ReasonTimeout, want: ErrTimeout, detail: "did not finish within 100ms",
	}, {
		name: "a billion-byte string", tpl: `{{ repeat 1000000000 "x" }}`,
		reason: ReasonLimit, want: ErrBudgetExceeded, detail: "repeat would produce about 10000000",
	}, {
		name: "a string doubled in a loop", tpl: `{{ $s := "xx" }}{{ range $i := 100 }}{{ $s = printf "%s%s" $s $s }}{{ end }}`,
		reason: ReasonLimit, want: ErrBudgetExceeded, detail: "printf",
	}, {
		name: "a huge indentation", tpl: `{{ "a\nb" | nindent 1000000000 }}`,
		reason: ReasonLimit, want: ErrBudgetExceeded, detail: "nindent would produce",
	}, {
		name: "a replacement at every position", tpl: `{{ regexReplaceAll "" (repeat 100000 "a") (repeat 100000 "b") }}`,
		reason: ReasonLimit, want: ErrBudgetExceeded, detail: "regexReplaceAll would produce",
	}, {
		name: "a wide printf", tpl: `{{ range $i := 1000 }}{{ $_ := printf "%999999d%999999d" 1 2 }}{{ end }}`,
		reason: ReasonLimit, want: ErrBudgetExceeded, detail: "bytes",
	}, {
		name: "a map that doubles by reference", tpl: `{{ $m := dict }}{{ range $i := 64 }}{{ $m = dict "a" $m "b" $m }}{{ end }}{{ $m }}`,
		reason: ReasonLimit, want: ErrBudgetExceeded, detail: "printing a value would produce",
	}, {
		name: "a map nested 20,000 deep, printed", tpl: `{{ $root := dict }}{{ $cur := $root }}{{ range $i := 20000 }}{{ $n := dict }}{{ $_ := set $cur "a" $n }}{{ $cur = $n }}{{ end }}{{ $root }}`,
		reason: ReasonLimit, want: ErrBudgetExceeded, detail: "printing a value would produce",
	}, {
		name: "a map doubled by reference, merged", tpl: `{{ $m := dict }}{{ range $i := 64 }}{{ $m = dict "a" $m "b" $m }}{{ end }}{{ $_ := merge $m $m }}`,
		reason: ReasonLimit, want: ErrBudgetExceeded, detail: "merge would produce",
	}, {
		name: "a list appended to in a long loop", tpl: `{{ $l := list }}{{ range $i := 100000 }}{{ $l = append $l $i }}{{ end }}`,
		reason: ReasonLimit, want: ErrBudgetExceeded, detail: "steps",
	}, {
		name: "output that floods", tpl: `{{ range $i := 10000000 }}xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx{{ end }}`,
		reason: ReasonLimit, want: ErrOutputTooLarge, detail: "rendered files larger than 8388608 bytes",
	}, {
		name: "include without end", tpl: `{{ define "r" }}{{ include "r" . }}{{ end }}{{ include "r" . }}`,
		reason: ReasonLimit, want: ErrBudgetExceeded, detail: "include and tpl nested deeper than 64",
	}, {
		name: "tpl of itself", tpl: `{{ tpl .Values.t . }}`, values: map[string]any{"t": "{{ tpl .Values.t . }}"},
		reason: ReasonLimit, want: ErrBudgetExceeded, detail: "nested deeper than 64",
	}, {
		name: "a loop inside tpl text", tpl: `{{ tpl .Values.t . }}`, values: map[string]any{"t": "{{ range $i := 100000000000 }}{{ end }}"},
		reason: ReasonLimit, want: ErrBudgetExceeded, detail: "steps",
	}, {
		name: "uniq of a long list", tpl: `{{ uniq (until 100000) }}`,
		reason: ReasonLimit, want: ErrBudgetExceeded, detail: "steps",
	}, {
		name: "too many objects", tpl: strings.Replace(configMaps, "%s", "1001", 1),
		reason: ReasonLimit, want: ErrTooManyObjects, detail: "more than 1000 objects",
	}, {
		name: "an object of 2 MB", tpl: cm + `data: {a: {{ repeat 2000000 "x" | quote }}}`,
		reason: ReasonLimit, want: ErrObjectTooLarge, detail: "more than 1048576",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			b := loadTest(t, map[string]string{"templates/x.yaml": tt.tpl})
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			lim := tt.limits
			if lim == nil {
				// The default limits, but time enough for a slow machine
				// (-race) to reach them.
				lim = &Limits{Timeout: time.Minute}
			}
			out, err := b.Render(Request{Purpose: PurposeColonyCluster, Namespace: "team-a", Values: tt.values, Limits: lim})
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			t.Log(err, took, (after.TotalAlloc-before.TotalAlloc)>>20, "MiB")
			g.Expect(out).To(BeNil())
			rerr := asRenderError(g, err)
			g.Expect(rerr.Reason).To(Equal(tt.reason))
			g.Expect(errors.Is(err, tt.want)).To(BeTrue(), "want %v", tt.want)
			g.Expect(rerr.File).To(Equal("templates/x.yaml"))
			g.Expect(err.Error()).To(ContainSubstring(tt.detail))
			g.Expect(took).To(BeNumerically("<", 30*time.Second))
			g.Expect(after.TotalAlloc-before.TotalAlloc).To(BeNumerically("<", 512<<20), "allocated")
		})
	}
}

// A map put into itself would make fmt recurse until the stack overflows,
// which kills the manager: it fails the template instead.
func TestRenderRefusesMapsThatContainThemselves(t *testing.T) {
	for name, tpl := range map[string]string{
		"set":            `{{ $d := dict }}{{ $_ := set $d "self" $d }}{{ $d }}`,
		"set through":    `{{ $d := dict }}{{ $_ := set $d "l" (list (dict "d" $d)) }}{{ $d }}`,
		"merge":          `{{ $a := dict "n" (dict) }}{{ $_ := merge $a (dict "n" (dict "x" $a.n)) }}{{ $a }}`,
		"mergeOverwrite": `{{ $a := dict "n" (dict) }}{{ $_ := mergeOverwrite $a (dict "n" (dict "x" $a.n)) }}{{ toString $a }}`,
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := renderAny(loadTest(t, map[string]string{"templates/x.yaml": tpl}), Request{})
			rerr := asRenderError(g, err)
			g.Expect(rerr.Reason).To(Equal(ReasonTemplate))
			g.Expect(rerr.Line).To(Equal(1))
			g.Expect(errors.Is(err, errCycle)).To(BeTrue())
			g.Expect(err.Error()).To(ContainSubstring("a map or list cannot contain itself"))
		})
	}
}

func TestRenderRefusesRecursiveTemplateActionsWhenLoaded(t *testing.T) {
	for name, files := range map[string]map[string]string{
		"itself":  {"templates/x.yaml": `{{ define "r" }}{{ template "r" . }}{{ end }}`},
		"through": {"templates/_h.tpl": `{{ define "a" }}{{ if .x }}{{ template "b" . }}{{ end }}{{ end }}{{ define "b" }}{{ template "a" . }}{{ end }}`},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := loadTestErr(files)
			g.Expect(asRenderError(g, err).Reason).To(Equal(ReasonTemplate))
			g.Expect(err).To(MatchError(ContainSubstring("calls itself through template actions")))
		})
	}
	g := NewWithT(t)
	_, err := renderAny(loadTest(t, map[string]string{"templates/x.yaml": `{{ tpl .Values.t . }}`}),
		Request{Values: map[string]any{"t": `{{ define "r" }}{{ template "r" . }}{{ end }}`}})
	g.Expect(err).To(MatchError(ContainSubstring("calls itself through template actions")))
}

// Forbidden functions stay forbidden in the text given to tpl.
func TestRenderChecksTplText(t *testing.T) {
	g := NewWithT(t)
	_, err := renderAny(loadTest(t, map[string]string{"templates/x.yaml": "\n{{ tpl .Values.t . }}"}),
		Request{Values: map[string]any{"t": `{{ now }}`}})
	rerr := asRenderError(g, err)
	g.Expect(rerr.File).To(Equal("templates/x.yaml"))
	g.Expect(rerr.Line).To(Equal(2))
	g.Expect(err).To(MatchError(ContainSubstring(`function "now" is not allowed`)))
}

func TestRenderStopsWhenTheContextEnds(t *testing.T) {
	g := NewWithT(t)
	b := loadTest(t, map[string]string{"templates/x.yaml": `{{ range $i := 100000000000 }}{{ end }}`})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := b.RenderContext(ctx, Request{Purpose: PurposeColonyCluster, Namespace: "team-a"})
	g.Expect(asRenderError(g, err).Reason).To(Equal(ReasonTimeout))
	g.Expect(errors.Is(err, ErrTimeout)).To(BeTrue())
	g.Expect(err).To(MatchError(ContainSubstring("context canceled")))
}

// The limits leave room for what real bundles do: 1,000 objects, helpers
// called for each with the whole context, values copied and printed.
func TestRenderLimitsAllowLargeRealisticBundles(t *testing.T) {
	g := NewWithT(t)
	b := loadTest(t, map[string]string{
		"templates/_h.tpl": `{{ define "labels" }}{{ toYaml (dict "app" .name "index" (toString .i) "release" .root.Release.Name) }}{{ end }}`,
		"templates/x.yaml": `{{ range $i := until 1000 }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ printf "c-%04d" $i }}
  namespace: {{ $.Release.Namespace }}
  labels:
    {{- include "labels" (dict "root" $ "name" "x" "i" $i) | nindent 4 }}
data:
  values: {{ toJson $.Values | quote }}
{{- end }}`,
	})
	out, err := b.Render(Request{Purpose: PurposeColonyCluster, Namespace: "team-a", Limits: &Limits{Timeout: time.Minute},
		Values: map[string]any{"list": strings.Split(strings.Repeat("item,", 200), ",")}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.Objects).To(HaveLen(1000))
}
