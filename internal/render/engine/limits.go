package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Limits bound one execution, so that a template written to run forever,
// to recurse, or to build huge values fails instead of holding a worker and
// the process's memory. A zero (or negative) limit allows nothing: the
// first step, byte or nesting fails.
type Limits struct {
	// Timeout bounds the execution's wall-clock time.
	Timeout time.Duration
	// MaxSteps bounds the templates' steps: function calls, loop
	// iterations and calls of defined templates.
	MaxSteps int64
	// MaxWorkBytes bounds the bytes the templates produce: text written,
	// values functions return, 16 bytes per entry put into a map or list.
	// A value printed, encoded or copied counts as expanded: a map shared
	// in several places counts once per place.
	MaxWorkBytes int64
	// MaxDepth bounds nested include and tpl calls.
	MaxDepth int
	// MaxOutputBytes bounds the rendered text of all files together.
	MaxOutputBytes int64
}

// Errors an execution over its Limits wraps.
var (
	// ErrOutputTooLarge: rendered text above Limits.MaxOutputBytes.
	ErrOutputTooLarge = errors.New("output too large")
	// ErrBudgetExceeded: more steps, work bytes or nesting than the Limits.
	ErrBudgetExceeded = errors.New("render budget exceeded")
	// ErrTimeout: the execution outlived Limits.Timeout or its context.
	ErrTimeout = errors.New("render timed out")
)

// guard keeps the account of one execution: each step, byte and nesting
// level is charged to it, and the first limit hit stops the execution. A
// guard belongs to one execution and one goroutine.
type guard struct {
	ctx      context.Context
	deadline time.Time
	lim      Limits
	steps    int64
	work     int64
	output   int64
	depth    int
	// err is the first limit hit; once set, every charge fails with it.
	err error
}

func newGuard(ctx context.Context, lim Limits) *guard {
	deadline := time.Now().Add(lim.Timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	return &guard{ctx: ctx, deadline: deadline, lim: lim}
}

// stop records err as the reason the execution stops, unless one is
// recorded.
func (g *guard) stop(err error) error {
	if g.err == nil {
		g.err = err
	}
	return g.err
}

// step charges n steps, and checks the clock every 64 steps.
func (g *guard) step(n int64) error {
	if g.err != nil {
		return g.err
	}
	before := g.steps
	g.steps += n
	if g.steps > g.lim.MaxSteps {
		return g.stop(&detailError{sentinel: ErrBudgetExceeded,
			msg: fmt.Sprintf("more than %d steps (function calls, loop iterations and template calls)", g.lim.MaxSteps)})
	}
	if before>>6 != g.steps>>6 {
		return g.checkTime()
	}
	return nil
}

func (g *guard) checkTime() error {
	if err := g.ctx.Err(); err != nil {
		return g.stop(&detailError{sentinel: ErrTimeout, msg: fmt.Sprintf("stopped: %v", err)})
	}
	if time.Now().After(g.deadline) {
		return g.stop(&detailError{sentinel: ErrTimeout, msg: fmt.Sprintf("did not finish within %s", g.lim.Timeout)})
	}
	return nil
}

// remaining is the work budget left.
func (g *guard) remaining() int64 { return g.lim.MaxWorkBytes - g.work }

// charge charges n bytes of work.
func (g *guard) charge(n int64) error {
	if g.err != nil {
		return g.err
	}
	g.work += n
	if g.work > g.lim.MaxWorkBytes {
		return g.stop(&detailError{sentinel: ErrBudgetExceeded,
			msg: fmt.Sprintf("templates produced more than %d bytes (text, function results and copied values)", g.lim.MaxWorkBytes)})
	}
	return nil
}

// tooLarge fails when a call is expected to produce n bytes, more than the
// work left, before it allocates them.
func (g *guard) tooLarge(what string, n int64) error {
	if n <= g.remaining() {
		return nil
	}
	return g.stop(&detailError{sentinel: ErrBudgetExceeded,
		msg: fmt.Sprintf("%s would produce about %d bytes, more than the %d bytes left of the render's %d", what, n, max(g.remaining(), 0), g.lim.MaxWorkBytes)})
}

// enter starts a nested include or tpl call; leave ends it.
func (g *guard) enter() error {
	if err := g.step(1); err != nil {
		return err
	}
	g.depth++
	if g.depth > g.lim.MaxDepth {
		return g.stop(&detailError{sentinel: ErrBudgetExceeded,
			msg: fmt.Sprintf("include and tpl nested deeper than %d", g.lim.MaxDepth)})
	}
	return nil
}

func (g *guard) leave() { g.depth-- }

// writer is where a template writes: every byte is charged, and those of a
// rendered file count towards the output limit too. A write over a limit
// fails, which stops the template at once.
type writer struct {
	g      *guard
	output bool
	buf    strings.Builder
}

func (w *writer) Write(p []byte) (int, error) {
	if err := w.g.charge(int64(len(p))); err != nil {
		return 0, err
	}
	if w.output {
		w.g.output += int64(len(p))
		if w.g.output > w.g.lim.MaxOutputBytes {
			return 0, w.g.stop(&detailError{sentinel: ErrOutputTooLarge,
				msg: fmt.Sprintf("rendered files larger than %d bytes", w.g.lim.MaxOutputBytes)})
		}
	}
	return w.buf.Write(p)
}

func (w *writer) String() string { return w.buf.String() }
