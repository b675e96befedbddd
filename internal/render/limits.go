package render

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Limits bound one render, so that a template written to run forever, to
// recurse, or to build huge values fails instead of holding a worker and the
// manager's memory.
type Limits struct {
	// Timeout bounds the render's wall-clock time.
	Timeout time.Duration
	// MaxSteps bounds the template's steps: function calls, loop
	// iterations and calls of defined templates.
	MaxSteps int64
	// MaxWorkBytes bounds the bytes the templates produce: text written,
	// values functions return, 16 bytes per entry put into a map or list.
	// A value printed, encoded or copied counts as expanded: a map shared
	// in several places counts once per place.
	MaxWorkBytes int64
	// MaxDepth bounds nested include and tpl calls.
	MaxDepth int
	// MaxObjects bounds the objects of the output.
	MaxObjects int
	// MaxObjectBytes bounds the rendered YAML of one object.
	MaxObjectBytes int
	// MaxOutputBytes bounds the rendered text of all files together.
	MaxOutputBytes int64
}

// DefaultLimits are the limits of a Request that sets none. An object above
// 1 MiB could not be stored (etcd's request limit is 1.5 MiB, and Secrets and
// ConfigMaps hold at most 1 MiB of data). 1,000 objects is many times what
// any owner renders (one ClusterDeployment per Colony entry, two objects per
// workspace, a few per route) and bounds the API calls or files of one owner.
// 8 MiB of output is 1,000 objects of 8 KiB, the size of the bundle limit.
// The templates' work is bounded at four times the output, and 250,000 steps
// take well under a second, far more than the built-in bundles need (a few
// hundred).
func DefaultLimits() Limits {
	return Limits{
		Timeout:        5 * time.Second,
		MaxSteps:       250_000,
		MaxWorkBytes:   32 << 20,
		MaxDepth:       64,
		MaxObjects:     1000,
		MaxObjectBytes: 1 << 20,
		MaxOutputBytes: 8 << 20,
	}
}

// withDefaults replaces every unset (zero or negative) limit by its default.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.Timeout <= 0 {
		l.Timeout = d.Timeout
	}
	if l.MaxSteps <= 0 {
		l.MaxSteps = d.MaxSteps
	}
	if l.MaxWorkBytes <= 0 {
		l.MaxWorkBytes = d.MaxWorkBytes
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = d.MaxDepth
	}
	if l.MaxObjects <= 0 {
		l.MaxObjects = d.MaxObjects
	}
	if l.MaxObjectBytes <= 0 {
		l.MaxObjectBytes = d.MaxObjectBytes
	}
	if l.MaxOutputBytes <= 0 {
		l.MaxOutputBytes = d.MaxOutputBytes
	}
	return l
}

// Errors a render over its Limits wraps, inside an *Error of ReasonLimit
// (ErrTimeout: ReasonTimeout).
var (
	// ErrTooManyObjects: more objects than Limits.MaxObjects.
	ErrTooManyObjects = errors.New("too many objects")
	// ErrObjectTooLarge: one object above Limits.MaxObjectBytes.
	ErrObjectTooLarge = errors.New("object too large")
	// ErrOutputTooLarge: rendered text above Limits.MaxOutputBytes.
	ErrOutputTooLarge = errors.New("output too large")
	// ErrBudgetExceeded: more steps, work bytes or nesting than the Limits.
	ErrBudgetExceeded = errors.New("render budget exceeded")
	// ErrTimeout: the render outlived Limits.Timeout or its context.
	ErrTimeout = errors.New("render timed out")
)

// guard keeps the account of one render: each step, byte and nesting level
// is charged to it, and the first limit hit stops the render. A guard
// belongs to one render and one goroutine.
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

// stop records err as the reason the render stops, unless one is recorded.
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
