package standin

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig/v3"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
)

// ParseValues parses Helm values given as a YAML or JSON document. An empty
// document gives empty values; a document that is not a map is an error.
func ParseValues(doc []byte) (map[string]any, error) {
	var v any
	if err := yaml.Unmarshal(doc, &v); err != nil {
		return nil, fmt.Errorf("parsing values: %w", err)
	}
	switch m := v.(type) {
	case nil:
		return map[string]any{}, nil
	case map[string]any:
		return m, nil
	default:
		return nil, fmt.Errorf("values are a %T, not a map", v)
	}
}

// MergeValues deep-merges src into dst and returns dst: maps are merged key
// by key, anything else in src replaces what dst holds (later wins, as
// Sveltos merges valuesFrom into values). A nil dst is allocated.
func MergeValues(dst, src map[string]any) map[string]any {
	if dst == nil {
		dst = map[string]any{}
	}
	for k, sv := range src {
		sm, srcIsMap := sv.(map[string]any)
		dm, dstIsMap := dst[k].(map[string]any)
		if srcIsMap && dstIsMap {
			dst[k] = MergeValues(dm, sm)
			continue
		}
		if srcIsMap {
			sv = MergeValues(nil, sm) // copy, so dst never aliases src
		}
		dst[k] = sv
	}
	return dst
}

// serviceValues returns the values of a ServiceSet entry of cluster: its
// values, instantiated as a Go template as Sveltos does, deep-merged with
// each valuesFrom object in order (every data key of the ConfigMap or
// Secret, in key order, parsed as a values document).
func serviceValues(ctx context.Context, c client.Reader, ns, cluster string, entry *k0rdentv1beta1.ServiceWithValues) (map[string]any, error) {
	text, err := instantiate(entry.Values, ns, cluster)
	if err != nil {
		return nil, fmt.Errorf("values of service %s/%s: %w", entry.Namespace, entry.Name, err)
	}
	values, err := ParseValues([]byte(text))
	if err != nil {
		return nil, fmt.Errorf("values of service %s/%s: %w", entry.Namespace, entry.Name, err)
	}
	for _, from := range entry.ValuesFrom {
		key := client.ObjectKey{Namespace: ns, Name: from.Name}
		var data map[string][]byte
		switch from.Kind {
		case "ConfigMap":
			cm := &corev1.ConfigMap{}
			if err := c.Get(ctx, key, cm); err != nil {
				return nil, fmt.Errorf("getting valuesFrom ConfigMap %s: %w", key, err)
			}
			data = map[string][]byte{}
			for k, v := range cm.Data {
				data[k] = []byte(v)
			}
		case "Secret":
			s := &corev1.Secret{}
			if err := c.Get(ctx, key, s); err != nil {
				return nil, fmt.Errorf("getting valuesFrom Secret %s: %w", key, err)
			}
			data = s.Data
		default:
			return nil, fmt.Errorf("valuesFrom %s %s: kind must be ConfigMap or Secret", from.Kind, key)
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v, err := ParseValues(data[k])
			if err != nil {
				// The key is named, never its content: it may be secret.
				return nil, fmt.Errorf("valuesFrom %s %s, key %s: %w", from.Kind, key, k, err)
			}
			values = MergeValues(values, v)
		}
	}
	return values, nil
}

// instantiate runs values through Go's text/template with sprig's
// functions and the cluster's metadata, as Sveltos's addon-controller does
// with a Profile's Helm values (instantiateTemplateValues: default
// delimiters, missingkey=error), so that what reaches the chart is what a
// real k0rdent would install.
func instantiate(values, ns, cluster string) (string, error) {
	tmpl, err := template.New("values").Option("missingkey=error").Funcs(sprig.TxtFuncMap()).Parse(values)
	if err != nil {
		return "", fmt.Errorf("parsing the values as a template: %w", err)
	}
	data := map[string]any{"Cluster": map[string]any{"metadata": map[string]any{"name": cluster, "namespace": ns}}}
	var out strings.Builder
	if err := tmpl.Execute(&out, data); err != nil {
		return "", fmt.Errorf("instantiating the values: %w", err)
	}
	return out.String(), nil
}
