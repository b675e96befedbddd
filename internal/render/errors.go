package render

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Classes of an Error, one CamelCase word each. A class is no condition's
// reason and is never set as one (the reasons are declared in api/, one list
// per API group): a bundle that fails to load or render makes the object's
// reason RenderFailed, with the Error's message.
const (
	// ReasonBundle: the bundle's files cannot be loaded (missing Chart.yaml,
	// bad ConfigMap key, invalid values.yaml or values.schema.json, ...).
	ReasonBundle = "BundleInvalid"
	// ReasonInput: the request cannot be encoded as JSON values.
	ReasonInput = "InputInvalid"
	// ReasonSchema: the merged values fail the bundle's values.schema.json.
	ReasonSchema = "SchemaMismatch"
	// ReasonTemplate: a template does not parse, fails while rendering
	// (required, fail, a nil value, ...) or calls a function Apiary forbids.
	ReasonTemplate = "TemplateError"
	// ReasonOutput: a template rendered something that is not a valid set of
	// Kubernetes objects (invalid YAML, no kind, duplicates, ...).
	ReasonOutput = "OutputInvalid"
	// ReasonNotAllowed: a rendered object is outside what the render's
	// Purpose allows (ConfinementOf): another kind, another namespace, or
	// cluster-scoped. The error wraps ErrKindNotAllowed, ErrClusterScoped
	// or ErrNamespaceNotAllowed.
	ReasonNotAllowed = "OutputNotAllowed"
	// ReasonLimit: the render went over a limit of its Limits. The error
	// wraps ErrTooManyObjects, ErrObjectTooLarge, ErrOutputTooLarge or
	// ErrBudgetExceeded.
	ReasonLimit = "RenderLimitExceeded"
	// ReasonTimeout: the render did not finish in time (Limits.Timeout or
	// the context's deadline). The error wraps ErrTimeout.
	ReasonTimeout = "RenderTimedOut"
)

// ErrBundleNotFound is returned (wrapped) by Registry.Get for an unknown bundle.
var ErrBundleNotFound = errors.New("bundle not found")

// Error is a failure to load or render a bundle. Its message names the bundle,
// the file and the line, and is meant to be shown to users as is, for example
// in a status condition.
type Error struct {
	// Bundle is the name of the bundle.
	Bundle string
	// File is the path of the file in the bundle, e.g.
	// templates/clusterdeployment.yaml, or empty.
	File string
	// Line is the 1-based line in File, or 0 when unknown. For ReasonOutput,
	// ReasonNotAllowed and the object limits it is the line of the rendered
	// output, not of the template source.
	Line int
	// Reason is one of the Reason constants.
	Reason string
	// Err is the underlying error; its message is the detail shown to users.
	Err error

	// renderedLine says Line is a line of the rendered output.
	renderedLine bool
}

// Error returns a one-line message such as
// `bundle "colony-cluster": template error at templates/cd.yaml:12: values.template is required`.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "bundle %q: ", e.Bundle)
	switch {
	case e.Reason == ReasonSchema && e.File != "":
		// "values do not match values.schema.json: at /template: ..."
		b.WriteString("values do not match ")
		b.WriteString(e.File)
	default:
		b.WriteString(reasonPhrase(e.Reason))
		e.writeLocation(&b)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(oneLine(e.Err.Error()))
	}
	return b.String()
}

func (e *Error) writeLocation(b *strings.Builder) {
	if e.File != "" {
		b.WriteString(" at ")
		b.WriteString(e.File)
		if e.Line > 0 {
			b.WriteString(":")
			b.WriteString(strconv.Itoa(e.Line))
			if e.renderedLine {
				b.WriteString(" (rendered output)")
			}
		}
	}
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

func reasonPhrase(reason string) string {
	switch reason {
	case ReasonBundle:
		return "invalid bundle"
	case ReasonInput:
		return "invalid input"
	case ReasonSchema:
		return "invalid values"
	case ReasonTemplate:
		return "template error"
	case ReasonOutput:
		return "invalid output"
	case ReasonNotAllowed:
		return "output not allowed"
	case ReasonLimit:
		return "render limit exceeded"
	case ReasonTimeout:
		return "render timed out"
	default:
		return "error"
	}
}

// oneLine joins the lines of a message with "; " so it fits in a condition.
func oneLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	out := lines[:0]
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "; ")
}

func newError(bundle, reason, file string, line int, err error) *Error {
	return &Error{Bundle: bundle, File: file, Line: line, Reason: reason, Err: err, renderedLine: reason == ReasonOutput}
}

// outputError is an error about the object that starts at line of the
// rendered file.
func outputError(bundle, reason, file string, line int, err error) *Error {
	e := newError(bundle, reason, file, line, err)
	e.renderedLine = true
	return e
}
