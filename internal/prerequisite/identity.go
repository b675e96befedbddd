package prerequisite

import (
	"encoding/json"
	"path"
	"strings"

	"github.com/Masterminds/semver/v3"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
)

// LabelKey, on a ServiceTemplate, names the prerequisite the template
// installs, for templates whose chart name says nothing (a chartRef, a
// kustomization) or says too little (two products with one chart name).
// Templates with the same value are versions of one prerequisite.
const LabelKey = "apiary.exalsius.ai/prerequisite"

// Template is what the decisions need of one ServiceTemplate.
type Template struct {
	// Name of the ServiceTemplate.
	Name string
	// Key names the prerequisite the template installs.
	Key string
	// Version is the template's semantic version; nil when it has none.
	Version *semver.Version
	// RawVersion is the version as written, possibly not semantic.
	RawVersion string
}

// FromServiceTemplate describes a ServiceTemplate.
func FromServiceTemplate(st *k0rdentv1beta1.ServiceTemplate) Template {
	v, raw := VersionOf(st)
	return Template{Name: st.Name, Key: KeyOf(st), Version: v, RawVersion: raw}
}

// Unresolved describes a template that cannot be read: it is a
// prerequisite of its own, of no known version.
func Unresolved(name string) Template { return Template{Name: name, Key: name} }

// String names the template with its version, e.g. "cert-manager-1-17 (1.17.0)".
func (t Template) String() string {
	if t.RawVersion == "" {
		return t.Name
	}
	return t.Name + " (" + t.RawVersion + ")"
}

// Same reports whether two templates are versions of one prerequisite: the
// same template, or the same key.
func (t Template) Same(o Template) bool { return t.Name == o.Name || t.Key == o.Key }

// KeyOf is the prerequisite a ServiceTemplate installs: its LabelKey label,
// else the base name of its Helm chart (spec.helm.chartSpec.chart), else the
// template's own name.
func KeyOf(st *k0rdentv1beta1.ServiceTemplate) string {
	if k := st.Labels[LabelKey]; k != "" {
		return k
	}
	if c := chartSpecOf(st); c.Chart != "" {
		if base := path.Base(strings.TrimRight(c.Chart, "/")); base != "." && base != "/" {
			return base
		}
	}
	return st.Name
}

// VersionOf is the semantic version of a ServiceTemplate, read as kcm
// reads the version of a service: spec.version, else the chart version of
// spec.helm.chartSpec when that is a version rather than a range. It also
// returns the version as written; the version is nil when neither parses.
func VersionOf(st *k0rdentv1beta1.ServiceTemplate) (*semver.Version, string) {
	raw := strings.TrimSpace(st.Spec.Version)
	if raw == "" {
		raw = strings.TrimSpace(chartSpecOf(st).Version)
	}
	if raw == "" {
		return nil, ""
	}
	v, err := semver.NewVersion(raw)
	if err != nil {
		return nil, raw
	}
	return v, raw
}

type chartSpec struct {
	Chart   string `json:"chart"`
	Version string `json:"version"`
}

func chartSpecOf(st *k0rdentv1beta1.ServiceTemplate) chartSpec {
	var c chartSpec
	if st.Spec.Helm != nil && st.Spec.Helm.ChartSpec != nil {
		_ = json.Unmarshal(st.Spec.Helm.ChartSpec.Raw, &c) // a malformed spec names no chart
	}
	return c
}
