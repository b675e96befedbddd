package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/apiaryhq/apiary/internal/render/engine/enginetest"
)

// FuzzExecute compiles and executes arbitrary template text under small
// limits: it never panics, fails only with an *Error, stops soon after its
// timeout, and writes no more than its output limit.
func FuzzExecute(f *testing.F) {
	for _, s := range append([]string{
		"apiVersion: v1\nkind: ConfigMap\n",
	}, enginetest.RunawayTemplates...) {
		f.Add(s)
	}
	lim := Limits{Timeout: time.Second, MaxSteps: 20_000, MaxWorkBytes: 4 << 20, MaxDepth: 16, MaxOutputBytes: 1 << 20}
	f.Fuzz(func(t *testing.T, text string) {
		if len(text) > 4096 {
			return
		}
		tm, err := Compile(testChart(map[string]string{"templates/x.yaml": text}, map[string]string{"files/f.txt": "data"}))
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("compiling: not an *Error: %v", err)
			}
			return
		}
		start := time.Now()
		out, err := tm.Execute(context.Background(), lim, map[string]any{
			"Values": map[string]any{"t": text, "n": 3, "l": []any{"a", map[string]any{"b": 1}}}})
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("execution took %s", took)
		}
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("not an *Error: %v", err)
			}
			return
		}
		if n := len(out["templates/x.yaml"]); int64(n) > lim.MaxOutputBytes {
			t.Fatalf("wrote %d bytes", n)
		}
	})
}
