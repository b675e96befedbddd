package render

import (
	"context"
	"errors"
	"fmt"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chartutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/apiaryhq/apiary/internal/render/engine"
)

// Request is what a bundle renders.
type Request struct {
	// Purpose is what the caller renders the bundle for; with Namespace it
	// fixes what the render may produce (ConfinementOf). Required: a
	// request without a known Purpose renders nothing.
	Purpose Purpose
	// ReleaseName is .Release.Name; empty means the chart's name.
	ReleaseName string
	// Namespace is .Release.Namespace, and the only namespace the rendered
	// objects may be in: the owner's (the Colony's, or the
	// ClusterDeployment's for a workspace's ServiceSet; see Purpose).
	// Objects are not changed: a template that wants a namespace writes it.
	Namespace string
	// Values are merged over the bundle's values.yaml (see MergeValues) and
	// checked against its values.schema.json; templates see them as .Values.
	Values map[string]any
	// Input is the bundle's documented input, seen as .Input.
	Input map[string]any
	// Limits bound the render; nil, or a zero field, means DefaultLimits.
	Limits *Limits
}

// capabilities are fixed, so the output never depends on a cluster.
var capabilities = chartutil.DefaultCapabilities.Copy()

// Render is RenderContext without a context of its own: it is bounded by
// the request's Limits.Timeout.
func (b *Bundle) Render(req Request) (*Output, error) {
	return b.RenderContext(context.Background(), req)
}

// RenderContext renders the bundle. Templates see .Values, .Input, .Release
// (Name, Namespace, IsInstall=true, IsUpgrade=false, Revision=1,
// Service=Apiary), .Chart, .Capabilities (fixed, no cluster) and .Files (the
// bundle's own files). The same request always gives the same Output. Every
// object of the Output is one the request's Purpose allows in its Namespace;
// any other fails the whole render. The render stops, with ReasonTimeout,
// when ctx ends or Limits.Timeout passes, and with ReasonLimit when it goes
// over another limit. Every failure is an *Error.
func (b *Bundle) RenderContext(ctx context.Context, req Request) (*Output, error) {
	conf, err := ConfinementOf(req.Purpose, req.Namespace)
	if err != nil {
		return nil, newError(b.Name, ReasonInput, "", 0, err)
	}
	out, origins, err := b.renderObjects(ctx, req)
	if err != nil {
		return nil, err
	}
	// Report the first refused object in the order of the files.
	var refused *Error
	for _, o := range out.Objects {
		if err := conf.Check(o); err != nil {
			at := origins[o]
			if refused == nil || at.file < refused.File || (at.file == refused.File && at.line < refused.Line) {
				refused = outputError(b.Name, ReasonNotAllowed, at.file, at.line, err)
			}
		}
	}
	if refused != nil {
		return nil, refused
	}
	return out, nil
}

// renderObjects renders the bundle's objects, whatever they are.
func (b *Bundle) renderObjects(ctx context.Context, req Request) (*Output, map[*unstructured.Unstructured]origin, error) {
	lim := DefaultLimits()
	if req.Limits != nil {
		lim = req.Limits.withDefaults()
	}
	values, err := normalize(req.Values)
	if err != nil {
		return nil, nil, newError(b.Name, ReasonInput, "", 0, fmt.Errorf("values: %w", err))
	}
	input, err := normalize(req.Input)
	if err != nil {
		return nil, nil, newError(b.Name, ReasonInput, "", 0, fmt.Errorf("input: %w", err))
	}
	merged := MergeValues(b.defaults, values)
	if b.schema != nil {
		if err := validateValues(b.schema, merged); err != nil {
			return nil, nil, newError(b.Name, ReasonSchema, "values.schema.json", 0, err)
		}
	}
	chartName := b.chart.Name()
	release := req.ReleaseName
	if release == "" {
		release = chartName
	}
	vals := map[string]any{
		"Values": merged,
		"Input":  input,
		"Release": map[string]any{
			"Name":      release,
			"Namespace": req.Namespace,
			"IsInstall": true,
			"IsUpgrade": false,
			"Revision":  1,
			"Service":   "Apiary",
		},
		"Chart": struct {
			chart.Metadata
			IsRoot bool
		}{*b.chart.Metadata, true},
		"Capabilities": capabilities,
		"Subcharts":    map[string]any{},
	}
	rendered, err := b.templates.Execute(ctx, lim.templateLimits(), vals)
	if err != nil {
		return nil, nil, templateError(b.Name, err)
	}
	return parseOutput(b.Name, rendered, lim)
}

// templateError turns an error of the engine into an *Error: ReasonTimeout
// or ReasonLimit when the render went over its Limits, else ReasonTemplate.
func templateError(bundle string, err error) *Error {
	var e *engine.Error
	if !errors.As(err, &e) {
		return newError(bundle, ReasonTemplate, "", 0, err)
	}
	reason := ReasonTemplate
	switch {
	case errors.Is(e.Err, ErrTimeout):
		reason = ReasonTimeout
	case errors.Is(e.Err, ErrBudgetExceeded), errors.Is(e.Err, ErrOutputTooLarge):
		reason = ReasonLimit
	}
	return newError(bundle, reason, e.File, e.Line, e.Err)
}
