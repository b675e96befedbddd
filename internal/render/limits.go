package render

import (
	"errors"
	"time"

	"github.com/apiaryhq/apiary/internal/render/engine"
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
	orDefault(&l.Timeout, d.Timeout)
	orDefault(&l.MaxSteps, d.MaxSteps)
	orDefault(&l.MaxWorkBytes, d.MaxWorkBytes)
	orDefault(&l.MaxDepth, d.MaxDepth)
	orDefault(&l.MaxObjects, d.MaxObjects)
	orDefault(&l.MaxObjectBytes, d.MaxObjectBytes)
	orDefault(&l.MaxOutputBytes, d.MaxOutputBytes)
	return l
}

// orDefault sets *v to d when it is zero or negative.
func orDefault[T ~int | ~int64](v *T, d T) {
	if *v <= 0 {
		*v = d
	}
}

// templateLimits are the limits the template engine enforces.
func (l Limits) templateLimits() engine.Limits {
	return engine.Limits{Timeout: l.Timeout, MaxSteps: l.MaxSteps, MaxWorkBytes: l.MaxWorkBytes,
		MaxDepth: l.MaxDepth, MaxOutputBytes: l.MaxOutputBytes}
}

// Errors a render over its Limits wraps, inside an *Error of ReasonLimit
// (ErrTimeout: ReasonTimeout). ErrOutputTooLarge, ErrBudgetExceeded and
// ErrTimeout are the engine's own values: errors.Is matches either name.
var (
	// ErrTooManyObjects: more objects than Limits.MaxObjects.
	ErrTooManyObjects = errors.New("too many objects")
	// ErrObjectTooLarge: one object above Limits.MaxObjectBytes.
	ErrObjectTooLarge = errors.New("object too large")
	// ErrOutputTooLarge: rendered text above Limits.MaxOutputBytes.
	ErrOutputTooLarge = engine.ErrOutputTooLarge
	// ErrBudgetExceeded: more steps, work bytes or nesting than the Limits.
	ErrBudgetExceeded = engine.ErrBudgetExceeded
	// ErrTimeout: the render outlived Limits.Timeout or its context.
	ErrTimeout = engine.ErrTimeout
)
