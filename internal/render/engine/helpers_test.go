package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chart"
)

// testLimits are the render package's default limits, with time enough for
// a slow machine (-race) to reach the others.
func testLimits() Limits {
	return Limits{Timeout: time.Minute, MaxSteps: 250_000, MaxWorkBytes: 32 << 20, MaxDepth: 64, MaxOutputBytes: 8 << 20}
}

// testChart is a chart named "test" with templates and other files, keyed
// by path.
func testChart(templates, files map[string]string) *chart.Chart {
	c := &chart.Chart{Metadata: &chart.Metadata{APIVersion: "v2", Name: "test", Version: "0.1.0"}}
	for name, data := range templates {
		c.Templates = append(c.Templates, &chart.File{Name: name, Data: []byte(data)})
	}
	for name, data := range files {
		c.Files = append(c.Files, &chart.File{Name: name, Data: []byte(data)})
	}
	return c
}

// compileTest compiles templates, and fails the test when they do not.
func compileTest(t testing.TB, templates map[string]string) *Templates {
	t.Helper()
	tm, err := Compile(testChart(templates, nil))
	if err != nil {
		t.Fatalf("compiling: %v", err)
	}
	return tm
}

// run compiles templates and executes them with data under lim.
func run(t testing.TB, templates map[string]string, lim Limits, data map[string]any) (map[string]string, error) {
	t.Helper()
	return compileTest(t, templates).Execute(context.Background(), lim, data)
}

// asError expects an *Error and returns it.
func asError(g Gomega, err error) *Error {
	var e *Error
	g.ExpectWithOffset(1, errors.As(err, &e)).To(BeTrue(), "want *engine.Error, got %v", err)
	return e
}
