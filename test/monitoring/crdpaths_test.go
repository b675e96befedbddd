package monitoring

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/kube-state-metrics/v2/pkg/customresourcestate"
	"k8s.io/kube-state-metrics/v2/pkg/metric"
	"sigs.k8s.io/yaml"
)

type jsonSchema = apiextensionsv1.JSONSchemaProps

// crdSchemas reads config/crd/bases: the schema of each served version, by
// group, version and kind.
func crdSchemas(t *testing.T) map[customresourcestate.GroupVersionKind]*jsonSchema {
	t.Helper()
	files, err := filepath.Glob(repoFile("config/crd/bases/*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in config/crd/bases: %v", err)
	}
	out := map[customresourcestate.GroupVersionKind]*jsonSchema{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, v := range crd.Spec.Versions {
			if v.Served && v.Schema != nil {
				out[customresourcestate.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: crd.Spec.Names.Kind}] = v.Schema.OpenAPIV3Schema
			}
		}
	}
	return out
}

// metadataFields are the fields of metadata a path may name: CRD schemas do
// not spell out metadata, the API server does.
var metadataFields = map[string]*jsonSchema{
	"name": {Type: "string"}, "namespace": {Type: "string"}, "uid": {Type: "string"},
	"creationTimestamp": {Type: "string", Format: "date-time"}, "generation": {Type: "integer"},
	"labels": {Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Schema: &jsonSchema{Type: "string"}}},
}

// resolve follows a kube-state-metrics path through a schema: field names,
// [key=value] lookups and indexes in lists.
func resolve(s *jsonSchema, path []string) (*jsonSchema, error) {
	for i, seg := range path {
		at := strings.Join(path[:i+1], ".")
		switch {
		case s.Type == "array":
			if s.Items == nil || s.Items.Schema == nil {
				return nil, fmt.Errorf("%s: a list without an item schema", at)
			}
			item := s.Items.Schema
			if strings.HasPrefix(seg, "[") && strings.HasSuffix(seg, "]") {
				key, _, ok := strings.Cut(seg[1:len(seg)-1], "=")
				if _, has := item.Properties[key]; !ok || !has {
					return nil, fmt.Errorf("%s: the items have no field %q to look up", at, key)
				}
			} else if _, err := strconv.Atoi(seg); err != nil {
				return nil, fmt.Errorf("%s: %q on a list, not a lookup or an index", at, seg)
			}
			s = item
		case i == 1 && path[0] == "metadata":
			m, ok := metadataFields[seg]
			if !ok {
				return nil, fmt.Errorf("%s: not a metadata field", at)
			}
			s = m
		case seg == "metadata" && i == 0:
			s = &jsonSchema{Type: "object"}
		default:
			p, ok := s.Properties[seg]
			if !ok {
				return nil, fmt.Errorf("%s: no such field", at)
			}
			s = &p
		}
	}
	return s, nil
}

func scalar(s *jsonSchema) bool {
	return s.XIntOrString || s.Type == "string" || s.Type == "integer" || s.Type == "number" || s.Type == "boolean"
}

// numeric is a scalar kube-state-metrics turns into a number: a number, a
// boolean, a quantity, a date, or a string of a closed set (a condition's status).
func numeric(s *jsonSchema) bool {
	return s.XIntOrString || s.Type == "integer" || s.Type == "number" || s.Type == "boolean" ||
		(s.Type == "string" && (s.Format == "date-time" || len(s.Enum) > 0))
}

// elements is the schema each series of a metric is read from: the items of
// a list, the values of a map (named by labelFromKey), or the value itself.
func elements(s *jsonSchema, labelFromKey string) (*jsonSchema, error) {
	switch {
	case s.Type == "array" && s.Items != nil && s.Items.Schema != nil:
		return s.Items.Schema, nil
	case s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
		if labelFromKey == "" {
			return nil, fmt.Errorf("a map without labelFromKey")
		}
		return s.AdditionalProperties.Schema, nil
	}
	return s, nil
}

func checkLabels(base *jsonSchema, labels map[string][]string) []error {
	var errs []error
	for name, p := range labels {
		s, err := resolve(base, p)
		switch {
		case err != nil:
			errs = append(errs, fmt.Errorf("label %s: %w", name, err))
		case !scalar(s):
			errs = append(errs, fmt.Errorf("label %s: %v is a %s, not a scalar", name, p, s.Type))
		}
	}
	return errs
}

// checkPaths returns what does not resolve in a resource's schema.
func checkPaths(root *jsonSchema, r customresourcestate.Resource) []error {
	errs := checkLabels(root, r.LabelsFromPath)
	for _, g := range r.Metrics {
		wrap := func(list []error) {
			for _, err := range list {
				errs = append(errs, fmt.Errorf("%s: %w", g.Name, err))
			}
		}
		wrap(checkLabels(root, g.LabelsFromPath))
		var meta customresourcestate.MetricMeta
		var valueFrom []string
		var key string
		switch g.Each.Type {
		case metric.Gauge:
			meta, valueFrom, key = g.Each.Gauge.MetricMeta, g.Each.Gauge.ValueFrom, g.Each.Gauge.LabelFromKey
		case metric.Info:
			meta, key = g.Each.Info.MetricMeta, g.Each.Info.LabelFromKey
		default:
			wrap([]error{fmt.Errorf("type %s is not checked", g.Each.Type)})
			continue
		}
		at, err := resolve(root, meta.Path)
		if err == nil {
			at, err = elements(at, key)
		}
		if err != nil {
			wrap([]error{fmt.Errorf("path %v: %w", meta.Path, err)})
			continue
		}
		wrap(checkLabels(at, meta.LabelsFromPath))
		if g.Each.Type != metric.Gauge {
			continue
		}
		v, err := resolve(at, valueFrom)
		switch {
		case err != nil:
			wrap([]error{fmt.Errorf("valueFrom %v: %w", valueFrom, err)})
		case !numeric(v):
			wrap([]error{fmt.Errorf("value %v%v is a %s kube-state-metrics cannot count", meta.Path, valueFrom, v.Type)})
		}
	}
	return errs
}

// TestKSMPathsResolveInTheCRDs: every path of the configuration names a
// field of the CRDs (a renamed field fails here), of the right kind.
func TestKSMPathsResolveInTheCRDs(t *testing.T) {
	schemas := crdSchemas(t)
	for _, r := range ksmResources(t) {
		t.Run(r.GroupVersionKind.Kind, func(t *testing.T) {
			g := NewWithT(t)
			root, ok := schemas[r.GroupVersionKind]
			g.Expect(ok).To(BeTrue(), "no CRD serves %v", r.GroupVersionKind)
			g.Expect(checkPaths(root, r)).To(BeEmpty())
		})
	}
}

// TestPathCheckCatchesDrift: the check refuses what a drifted or wrong path looks like.
func TestPathCheckCatchesDrift(t *testing.T) {
	schemas := crdSchemas(t)
	colony := schemas[customresourcestate.GroupVersionKind{Group: "infra.exalsius.ai", Version: "v1", Kind: "Colony"}]
	gauge := func(path, valueFrom []string, labels map[string][]string) customresourcestate.Resource {
		return customresourcestate.Resource{Metrics: []customresourcestate.Generator{{Name: "m", Each: customresourcestate.Metric{
			Type: metric.Gauge, Gauge: &customresourcestate.MetricGauge{MetricMeta: customresourcestate.MetricMeta{Path: path, LabelsFromPath: labels}, ValueFrom: valueFrom}}}}}
	}
	for name, r := range map[string]customresourcestate.Resource{
		"renamed field":        gauge([]string{"status", "readyCluster"}, nil, nil),
		"lookup key not there": gauge([]string{"status", "conditions", "[kind=Ready]", "status"}, nil, nil),
		"field of a list":      gauge([]string{"status", "clusters", "ready"}, nil, nil),
		"free text as a value": gauge([]string{"status", "clusters"}, []string{"message"}, nil),
		"object as a label":    gauge([]string{"status", "clusters"}, []string{"ready"}, map[string][]string{"c": {"clusterName", "x"}}),
		"map without key":      gauge([]string{"status", "gpuInventory"}, []string{"lastUpdated"}, nil),
		"unknown metadata":     {Labels: customresourcestate.Labels{LabelsFromPath: map[string][]string{"n": {"metadata", "nombre"}}}},
	} {
		t.Run(name, func(t *testing.T) {
			errs := checkPaths(colony, r)
			NewWithT(t).Expect(errs).NotTo(BeEmpty())
			t.Log(errs)
		})
	}
}
