package desired

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/render"
)

// renderError renders a one-template bundle for a workspace and returns
// the render's error.
func renderError(t *testing.T, ctx context.Context, tpl string, lim *render.Limits) error {
	t.Helper()
	b, err := render.LoadFiles("test", map[string][]byte{
		"Chart.yaml":       []byte("apiVersion: v2\nname: test\nversion: 0.1.0\n"),
		"templates/x.yaml": []byte(tpl),
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.RenderContext(ctx, render.Request{Purpose: render.PurposeWorkspaceServiceSet, Namespace: "team", Limits: lim})
	if err == nil {
		t.Fatal("the render succeeded")
	}
	return err
}

// A render that timed out is retried; one the bundle or values broke fails
// the workspace.
func TestRenderFailed(t *testing.T) {
	loop := `{{ range $i := 100000000000 }}{{ end }}`
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name     string
		err      error
		problem  bool
		timedOut bool
	}{
		{name: "timed out", err: renderError(t, context.Background(), loop, &render.Limits{Timeout: 50 * time.Millisecond, MaxSteps: 1 << 60}), timedOut: true},
		{name: "reconcile cancelled", err: renderError(t, cancelled, loop, nil), timedOut: true},
		{name: "template failed", err: renderError(t, context.Background(), `{{ fail "size must be small" }}`, nil), problem: true},
		{name: "over the steps", err: renderError(t, context.Background(), loop, nil), problem: true},
		{name: "not a render error", err: fmt.Errorf("resolving: %w", render.ErrBundleNotFound)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			obj := &workspacesv1.WorkspaceDeployment{}
			problem, err := renderFailed(obj, tt.err)
			if tt.problem {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(problem).NotTo(BeNil())
				g.Expect(problem.Wait).To(BeFalse())
				g.Expect(problem.Reason).To(Equal("RenderFailed"))
				g.Expect(problem.Message).To(Equal(tt.err.Error()))
				g.Expect(conditions.IsFalse(obj, workspacesv1.ConfigResolvedCondition)).To(BeTrue())
				return
			}
			g.Expect(problem).To(BeNil())
			g.Expect(errors.Is(err, tt.err)).To(BeTrue(), "the cause is kept")
			g.Expect(errors.Is(err, render.ErrTimeout)).To(Equal(tt.timedOut))
			g.Expect(conditions.Get(obj, workspacesv1.ConfigResolvedCondition)).To(BeNil(), "the workspace is not failed")
		})
	}
}
