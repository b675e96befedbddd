package engine

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/apiaryhq/apiary/internal/yamlbound/yamlboundtest"
)

// The decoding functions are charged before they run: a document that
// would decode to more than the work left (a YAML alias bomb of a few KiB,
// a long JSON or TOML list of empty lists) is refused without being
// decoded, and refusing it allocates little.
func TestDecodeFunctionsAreChargedBeforeTheyAllocate(t *testing.T) {
	// 7 KiB that expand to 60 MB (and made sigs.k8s.io/yaml allocate 438
	// MiB): few aliased values (yaml.v2 bounds their ratio, not their
	// bytes), each a long string.
	bomb := yamlboundtest.AliasBomb(2, 100, 6000)
	jsonList := "[" + strings.Repeat("[],", 1<<20) + "[]]"
	tomlDoc := "a = [" + strings.Repeat("[],", 1<<20) + "[]]"
	tests := []struct{ name, tpl, text string }{
		{"fromYaml of an alias bomb", `{{ $_ := fromYaml .Values.t }}`, bomb},
		{"fromYamlArray of an alias bomb", `{{ $_ := fromYamlArray .Values.t }}`, "- " + strings.ReplaceAll(strings.TrimSuffix(bomb, "\n"), "\n", "\n- ")},
		{"fromJson of a long list", `{{ $_ := fromJson .Values.t }}`, `{"a": ` + jsonList + `}`},
		{"fromJsonArray of a long list", `{{ $_ := fromJsonArray .Values.t }}`, jsonList},
		{"fromToml of a long list", `{{ $_ := fromToml .Values.t }}`, tomlDoc},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			lim := testLimits()
			lim.MaxWorkBytes = 8 << 20
			tm := compileTest(t, map[string]string{"templates/x.yaml": tt.tpl})
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := tm.Execute(context.Background(), lim, map[string]any{"Values": map[string]any{"t": tt.text}})
			runtime.ReadMemStats(&after)
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("%d bytes of text: %v; allocated %d KiB", len(tt.text), err, alloc>>10)
			g.Expect(errors.Is(err, ErrBudgetExceeded)).To(BeTrue(), "got %v", err)
			g.Expect(err.Error()).To(ContainSubstring("would produce about"), "refused before the call")
			g.Expect(alloc).To(BeNumerically("<", 24<<20), "allocated")
		})
	}
}

// Documents within the budget decode as before, aliases included.
func TestDecodeFunctionsDecode(t *testing.T) {
	g := NewWithT(t)
	out, err := run(t, map[string]string{"templates/x.yaml": `{{ (fromYaml .Values.y).b.x }} {{ index (fromYamlArray "[1, 2]") 1 }} {{ (fromJson "{\"a\": 3}").a }} {{ (fromToml "a = 4").a }} {{ (fromYaml "a: [").Error }}`},
		testLimits(), map[string]any{"Values": map[string]any{"y": "a: &a {x: 1}\nb: *a\n"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out["templates/x.yaml"]).To(HavePrefix("1 2 3 4 error converting YAML to JSON"))
}
