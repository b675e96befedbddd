package engine

import (
	"context"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
)

// Templates see what Helm's engine gives them: .Files, include, tpl,
// .Template, the last definition of a name in Helm's order, "<no value>"
// removed; helpers ("_" files) render nothing.
func TestExecuteRendersAsHelm(t *testing.T) {
	g := NewWithT(t)
	c := testChart(map[string]string{
		"templates/_a.tpl":    `{{ define "who" }}a{{ end }}`,
		"templates/_b.tpl":    `{{ define "who" }}b{{ end }}`,
		"templates/sub/x.txt": `{{ .Template.Name }} {{ .Template.BasePath }}`,
		"templates/x.txt": `who={{ include "who" . }}
get={{ .Files.Get "files/a.txt" }}
glob={{ range $k, $v := .Files.Glob "files/*.txt" }}{{ $k }};{{ end }}
lines={{ .Files.Lines "files/b.txt" | join "," }}
config={{ (.Files.Glob "files/a.txt").AsConfig | toJson }}
tpl={{ tpl "{{ .Values.name | upper }}" . }}
missing={{ .Values.nothing }}
yaml={{ toYaml .Values.list | fromYamlArray | len }}`,
	}, map[string]string{"files/a.txt": "A", "files/b.txt": "1\n2\n", "files/c/d.txt": "D"})
	tm, err := Compile(c)
	g.Expect(err).NotTo(HaveOccurred())
	data := map[string]any{"Values": map[string]any{"name": "n", "list": []any{1, 2, 3}}}
	out, err := tm.Execute(context.Background(), testLimits(), data)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(HaveLen(2))
	g.Expect(out["templates/sub/x.txt"]).To(Equal("test/templates/sub/x.txt test/templates"))
	g.Expect(out["templates/x.txt"]).To(Equal(`who=a
get=A
glob=files/a.txt;files/b.txt;
lines=1,2
config="a.txt: A"
tpl=N
missing=
yaml=3`))
	g.Expect(data).To(HaveLen(1), "Execute adds .Files and .Template to a copy")
}

// One compiled set renders concurrently, each execution with its own
// account.
func TestExecuteConcurrently(t *testing.T) {
	tm := compileTest(t, map[string]string{"templates/x.txt": `{{ range $i := until 100 }}{{ include "n" $i }}{{ end }}{{ define "n" }}{{ . }}{{ end }}`})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lim := testLimits()
			if i%2 == 1 {
				lim.MaxSteps = 50
			}
			out, err := tm.Execute(context.Background(), lim, nil)
			if (err != nil) != (i%2 == 1) || (err == nil && len(out["templates/x.txt"]) != 190) {
				t.Errorf("execution %d: %v %q", i, err, out)
			}
		}()
	}
	wg.Wait()
}
