package render

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
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
}

// inputKey carries the input through .Release into the templates, because
// Helm's engine passes only Values, Release, Chart, Capabilities, Files and
// Subcharts to them. The prelude that LoadFiles puts before each template
// moves it to .Input; it is on line 1 and holds no newline, so line numbers
// in errors are unchanged.
const inputKey = "__apiaryInput"

const inputPrelude = `{{ if hasKey .Release "` + inputKey + `" }}{{ $_ := set . "Input" (get .Release "` +
	inputKey + `") }}{{ $_ := unset .Release "` + inputKey + `" }}{{ end }}`

// capabilities are fixed, so the output never depends on a cluster.
var capabilities = chartutil.DefaultCapabilities.Copy()

// errNoLookup is what lookup returns when called anyway (from tpl).
var errNoLookup = errors.New("lookup is not available: bundles cannot read the cluster")

// noClusterAccess is the engine's client provider: it refuses every lookup,
// where Helm's engine without one would silently return nothing.
type noClusterAccess struct{}

func (noClusterAccess) GetClientFor(string, string) (dynamic.NamespaceableResourceInterface, bool, error) {
	return nil, false, errNoLookup
}

// Render renders the bundle. Templates see .Values, .Input, .Release (Name,
// Namespace, IsInstall=true, IsUpgrade=false, Revision=1, Service=Apiary),
// .Chart, .Capabilities (fixed, no cluster) and .Files (the bundle's own
// files). The same request always gives the same Output. Every object of the
// Output is one the request's Purpose allows in its Namespace; any other
// fails the whole render. Every failure is an *Error.
func (b *Bundle) Render(req Request) (*Output, error) {
	conf, err := ConfinementOf(req.Purpose, req.Namespace)
	if err != nil {
		return nil, newError(b.Name, ReasonInput, "", 0, err)
	}
	out, origins, err := b.renderObjects(req)
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
func (b *Bundle) renderObjects(req Request) (*Output, map[*unstructured.Unstructured]origin, error) {
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
	top := chartutil.Values{
		"Values": merged,
		"Release": map[string]any{
			"Name":      release,
			"Namespace": req.Namespace,
			"IsInstall": true,
			"IsUpgrade": false,
			"Revision":  1,
			"Service":   "Apiary",
			inputKey:    input,
		},
		"Chart":        b.chart.Metadata,
		"Capabilities": capabilities,
	}
	rendered, err := engine.RenderWithClientProvider(b.chart, top, noClusterAccess{})
	if err != nil {
		return nil, nil, templateError(b.Name, chartName, err)
	}
	return parseOutput(b.Name, chartName, rendered)
}

var (
	// "template: NAME:LINE[:COL]: " as text/template writes it; the last one
	// in a message is the innermost (an include'd or tpl'd template).
	execLocRE = regexp.MustCompile(`template: ([^\s:]+):(\d+)(?::\d+)?: `)
	// "parse error at (NAME:LINE[:COL]): " and "execution error at (...)",
	// as Helm rewrites parse errors and required/fail errors.
	helmLocRE = regexp.MustCompile(`(?:parse|execution) error at \(([^\s:()]+):(\d+)(?::\d+)?\): `)
)

// templateError turns an error of Helm's engine into an *Error naming the
// file and line of the bundle.
func templateError(bundle, chartName string, err error) *Error {
	msg := err.Error()
	file, line, detail := "", 0, msg
	var last []int
	for _, m := range execLocRE.FindAllStringSubmatchIndex(msg, -1) {
		// Text given to tpl is parsed as Helm's root template, "gotpl":
		// keep the innermost location that is a file of the bundle.
		if strings.HasPrefix(msg[m[2]:m[3]], chartName+"/") {
			last = m
		}
	}
	if m := last; m != nil {
		file, detail = msg[m[2]:m[3]], msg[m[1]:]
		line, _ = strconv.Atoi(msg[m[4]:m[5]])
	} else if m := helmLocRE.FindStringSubmatchIndex(msg); m != nil {
		file, detail = msg[m[2]:m[3]], msg[m[1]:]
		line, _ = strconv.Atoi(msg[m[4]:m[5]])
	}
	detail = strings.NewReplacer("HELM_ERR_START", "", "HELM_ERR_END", "", chartName+"/templates/", "templates/").Replace(detail)
	return newError(bundle, ReasonTemplate, trimChart(chartName, file), line, errors.New(detail))
}

// trimChart removes the chart-name folder Helm puts before template paths.
func trimChart(chartName, file string) string {
	return strings.TrimPrefix(file, chartName+"/")
}
