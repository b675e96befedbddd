package engine

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// Each hostile template is stopped with its own error, soon, and having
// allocated a bounded amount of memory.
func TestExecuteStopsRunawayTemplates(t *testing.T) {
	tests := []struct {
		name   string
		tpl    string
		values map[string]any
		limits func(*Limits)
		want   error
		detail string
	}{{
		name: "a list of 100 million numbers", tpl: `{{ range $i := until 100000000 }}x{{ end }}`,
		want: ErrBudgetExceeded, detail: "until would produce about 8000000",
	}, {
		name: "a loop of 100 billion iterations", tpl: `{{ range $i := 100000000000 }}{{ end }}`,
		want: ErrBudgetExceeded, detail: "more than 250000 steps",
	}, {
		name: "a loop that outlives the timeout", tpl: `{{ range $i := 100000000000 }}{{ end }}`,
		limits: func(l *Limits) { l.Timeout, l.MaxSteps = 100*time.Millisecond, 1<<60 },
		want:   ErrTimeout, detail: "did not finish within 100ms",
	}, {
		name: "a billion-byte string", tpl: `{{ repeat 1000000000 "x" }}`,
		want: ErrBudgetExceeded, detail: "repeat would produce about 10000000",
	}, {
		name: "a string doubled in a loop", tpl: `{{ $s := "xx" }}{{ range $i := 100 }}{{ $s = printf "%s%s" $s $s }}{{ end }}`,
		want: ErrBudgetExceeded, detail: "printf",
	}, {
		name: "a huge indentation", tpl: `{{ "a\nb" | nindent 1000000000 }}`,
		want: ErrBudgetExceeded, detail: "nindent would produce",
	}, {
		name: "a replacement at every position", tpl: `{{ regexReplaceAll "" (repeat 100000 "a") (repeat 100000 "b") }}`,
		want: ErrBudgetExceeded, detail: "regexReplaceAll would produce",
	}, {
		name: "a wide printf", tpl: `{{ range $i := 1000 }}{{ $_ := printf "%999999d%999999d" 1 2 }}{{ end }}`,
		want: ErrBudgetExceeded, detail: "bytes",
	}, {
		name: "a map that doubles by reference", tpl: `{{ $m := dict }}{{ range $i := 64 }}{{ $m = dict "a" $m "b" $m }}{{ end }}{{ $m }}`,
		want: ErrBudgetExceeded, detail: "printing a value would produce",
	}, {
		name: "a map nested 20,000 deep, printed", tpl: `{{ $root := dict }}{{ $cur := $root }}{{ range $i := 20000 }}{{ $n := dict }}{{ $_ := set $cur "a" $n }}{{ $cur = $n }}{{ end }}{{ $root }}`,
		want: ErrBudgetExceeded, detail: "printing a value would produce",
	}, {
		name: "a map doubled by reference, merged", tpl: `{{ $m := dict }}{{ range $i := 64 }}{{ $m = dict "a" $m "b" $m }}{{ end }}{{ $_ := merge $m $m }}`,
		want: ErrBudgetExceeded, detail: "merge would produce",
	}, {
		name: "a list appended to in a long loop", tpl: `{{ $l := list }}{{ range $i := 100000 }}{{ $l = append $l $i }}{{ end }}`,
		want: ErrBudgetExceeded, detail: "steps",
	}, {
		name: "output that floods", tpl: `{{ range $i := 10000000 }}xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx{{ end }}`,
		want: ErrOutputTooLarge, detail: "rendered files larger than 8388608 bytes",
	}, {
		name: "include without end", tpl: `{{ define "r" }}{{ include "r" . }}{{ end }}{{ include "r" . }}`,
		want: ErrBudgetExceeded, detail: "include and tpl nested deeper than 64",
	}, {
		name: "tpl of itself", tpl: `{{ tpl .Values.t . }}`, values: map[string]any{"t": "{{ tpl .Values.t . }}"},
		want: ErrBudgetExceeded, detail: "nested deeper than 64",
	}, {
		name: "a loop inside tpl text", tpl: `{{ tpl .Values.t . }}`, values: map[string]any{"t": "{{ range $i := 100000000000 }}{{ end }}"},
		want: ErrBudgetExceeded, detail: "steps",
	}, {
		name: "uniq of a long list", tpl: `{{ uniq (until 100000) }}`,
		want: ErrBudgetExceeded, detail: "steps",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			lim := testLimits()
			if tt.limits != nil {
				tt.limits(&lim)
			}
			tm := compileTest(t, map[string]string{"templates/x.yaml": tt.tpl})
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			out, err := tm.Execute(context.Background(), lim, map[string]any{"Values": tt.values})
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			t.Log(err, took, (after.TotalAlloc-before.TotalAlloc)>>20, "MiB")
			g.Expect(out).To(BeNil())
			g.Expect(asError(g, err).File).To(Equal("templates/x.yaml"))
			g.Expect(errors.Is(err, tt.want)).To(BeTrue(), "want %v", tt.want)
			g.Expect(err.Error()).To(ContainSubstring(tt.detail))
			g.Expect(took).To(BeNumerically("<", 30*time.Second))
			g.Expect(after.TotalAlloc-before.TotalAlloc).To(BeNumerically("<", 512<<20), "allocated")
		})
	}
}

// A zero limit allows nothing: the first step or byte fails.
func TestExecuteZeroLimitsAllowNothing(t *testing.T) {
	for name, tpl := range map[string]string{"a loop": `{{ range $i := 3 }}{{ end }}`, "text": "a"} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := run(t, map[string]string{"templates/x.yaml": tpl}, Limits{}, nil)
			g.Expect(errors.Is(err, ErrBudgetExceeded)).To(BeTrue(), "got %v", err)
		})
	}
}

// A map put into itself would make fmt recurse until the stack overflows,
// which kills the process: it fails the template instead.
func TestExecuteRefusesMapsThatContainThemselves(t *testing.T) {
	for name, tpl := range map[string]string{
		"set":            `{{ $d := dict }}{{ $_ := set $d "self" $d }}{{ $d }}`,
		"set through":    `{{ $d := dict }}{{ $_ := set $d "l" (list (dict "d" $d)) }}{{ $d }}`,
		"merge":          `{{ $a := dict "n" (dict) }}{{ $_ := merge $a (dict "n" (dict "x" $a.n)) }}{{ $a }}`,
		"mergeOverwrite": `{{ $a := dict "n" (dict) }}{{ $_ := mergeOverwrite $a (dict "n" (dict "x" $a.n)) }}{{ toString $a }}`,
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := run(t, map[string]string{"templates/x.yaml": tpl}, testLimits(), nil)
			g.Expect(asError(g, err).Line).To(Equal(1))
			g.Expect(errors.Is(err, errCycle)).To(BeTrue())
			g.Expect(errors.Is(err, ErrBudgetExceeded)).To(BeFalse())
			g.Expect(err.Error()).To(ContainSubstring("a map or list cannot contain itself"))
		})
	}
}

func TestCompileRefusesRecursiveTemplateActions(t *testing.T) {
	for name, templates := range map[string]map[string]string{
		"itself":  {"templates/x.yaml": `{{ define "r" }}{{ template "r" . }}{{ end }}`},
		"through": {"templates/_h.tpl": `{{ define "a" }}{{ if .x }}{{ template "b" . }}{{ end }}{{ end }}{{ define "b" }}{{ template "a" . }}{{ end }}`},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := Compile(testChart(templates, nil))
			asError(g, err)
			g.Expect(err).To(MatchError(ContainSubstring("calls itself through template actions")))
		})
	}
	g := NewWithT(t)
	_, err := run(t, map[string]string{"templates/x.yaml": `{{ tpl .Values.t . }}`}, testLimits(),
		map[string]any{"Values": map[string]any{"t": `{{ define "r" }}{{ template "r" . }}{{ end }}`}})
	g.Expect(err).To(MatchError(ContainSubstring("calls itself through template actions")))
}

// Forbidden functions stay forbidden in the text given to tpl.
func TestExecuteChecksTplText(t *testing.T) {
	g := NewWithT(t)
	_, err := run(t, map[string]string{"templates/x.yaml": "\n{{ tpl .Values.t . }}"}, testLimits(),
		map[string]any{"Values": map[string]any{"t": `{{ now }}`}})
	e := asError(g, err)
	g.Expect(e.File).To(Equal("templates/x.yaml"))
	g.Expect(e.Line).To(Equal(2))
	g.Expect(err).To(MatchError(ContainSubstring(`function "now" is not allowed`)))
}

func TestExecuteStopsWhenTheContextEnds(t *testing.T) {
	g := NewWithT(t)
	tm := compileTest(t, map[string]string{"templates/x.yaml": `{{ range $i := 100000000000 }}{{ end }}`})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := tm.Execute(ctx, testLimits(), nil)
	g.Expect(errors.Is(err, ErrTimeout)).To(BeTrue())
	g.Expect(err).To(MatchError(ContainSubstring("context canceled")))
}
