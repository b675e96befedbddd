package render

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// configMaps is a template of n ConfigMaps in team-a.
const configMaps = "{{ range $i := %s }}---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{{ $i }}\n  namespace: team-a\n{{ end }}"

// A render over its limits fails with ReasonLimit or ReasonTimeout and the
// limit's error, naming the file: the engine's limits (see package engine
// for each way to hit them) and the objects'.
func TestRenderStopsAtItsLimits(t *testing.T) {
	cm := object("v1", "ConfigMap", "team-a", "c")
	tests := []struct {
		name   string
		tpl    string
		limits *Limits
		reason string
		want   error
		detail string
	}{{
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
		name: "output that floods", tpl: `{{ range $i := 10000000 }}xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx{{ end }}`,
		reason: ReasonLimit, want: ErrOutputTooLarge, detail: "rendered files larger than 8388608 bytes",
	}, {
		name: "include without end", tpl: `{{ define "r" }}{{ include "r" . }}{{ end }}{{ include "r" . }}`,
		reason: ReasonLimit, want: ErrBudgetExceeded, detail: "include and tpl nested deeper than 64",
	}, {
		name: "too many objects", tpl: strings.Replace(configMaps, "%s", "1001", 1),
		reason: ReasonLimit, want: ErrTooManyObjects, detail: "more than 1000 objects",
	}, {
		name: "an object of 2 MB", tpl: cm + `data: {a: {{ repeat 2000000 "x" | quote }}}`,
		reason: ReasonLimit, want: ErrObjectTooLarge, detail: "more than 1048576",
	}, {
		name: "limits the request sets", tpl: strings.Replace(configMaps, "%s", "3", 1),
		limits: &Limits{MaxObjects: 2},
		reason: ReasonLimit, want: ErrTooManyObjects, detail: "more than 2 objects",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			b := loadTest(t, map[string]string{"templates/x.yaml": tt.tpl})
			lim := tt.limits
			if lim == nil {
				// The default limits, but time enough for a slow machine
				// (-race) to reach them.
				lim = &Limits{Timeout: time.Minute}
			}
			start := time.Now()
			out, err := b.Render(Request{Purpose: PurposeColonyCluster, Namespace: "team-a", Limits: lim})
			t.Log(err)
			g.Expect(out).To(BeNil())
			rerr := asRenderError(g, err)
			g.Expect(rerr.Reason).To(Equal(tt.reason))
			g.Expect(errors.Is(err, tt.want)).To(BeTrue(), "want %v", tt.want)
			g.Expect(rerr.File).To(Equal("templates/x.yaml"))
			g.Expect(err.Error()).To(ContainSubstring(tt.detail))
			g.Expect(time.Since(start)).To(BeNumerically("<", 30*time.Second))
		})
	}
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
