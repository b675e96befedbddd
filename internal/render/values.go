package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// normalize returns a deep copy of v made only of JSON types: map[string]any,
// []any, string, bool, int64 (integers), float64 and nil. It is how values and
// input become independent of the caller's maps and of Go's map ordering.
func normalize(v map[string]any) (map[string]any, error) {
	if v == nil {
		return map[string]any{}, nil
	}
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	if err := utiljson.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// parseValuesYAML parses a values.yaml file into normalized values; an empty
// file gives empty values.
func parseValuesYAML(data []byte) (map[string]any, error) {
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, err
	}
	j = bytes.TrimSpace(j)
	if len(j) == 0 || string(j) == "null" {
		return map[string]any{}, nil
	}
	var out any
	if err := utiljson.Unmarshal(j, &out); err != nil {
		return nil, err
	}
	m, ok := out.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("values must be a mapping, got %s", jsonKind(out))
	}
	return m, nil
}

// deepCopy copies a normalized value.
func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = deepCopy(e)
		}
		return m
	case []any:
		l := make([]any, len(t))
		for i, e := range t {
			l[i] = deepCopy(e)
		}
		return l
	default:
		return v
	}
}

// MergeValues returns a new map: over a deep copy of defaults, every key of
// override is set, maps are merged key by key, any other value (lists
// included) replaces the default, and a nil (JSON null) removes the default
// key, as with Helm. Neither argument is modified.
func MergeValues(defaults, override map[string]any) map[string]any {
	out, _ := deepCopy(defaults).(map[string]any)
	if out == nil {
		out = map[string]any{}
	}
	mergeInto(out, override)
	return out
}

func mergeInto(dst, src map[string]any) {
	for k, sv := range src {
		if sv == nil {
			delete(dst, k)
			continue
		}
		sm, sIsMap := sv.(map[string]any)
		dm, dIsMap := dst[k].(map[string]any)
		if sIsMap && dIsMap {
			mergeInto(dm, sm)
			continue
		}
		if sIsMap {
			// A fresh map, so that nulls inside it are dropped too.
			m := map[string]any{}
			mergeInto(m, sm)
			dst[k] = m
			continue
		}
		dst[k] = deepCopy(sv)
	}
}

// errNoLoad refuses every schema reference outside the schema itself.
var errNoLoad = errors.New("only references inside values.schema.json (\"#...\") are allowed: bundles cannot load files or URLs")

type refusingLoader struct{}

func (refusingLoader) Load(string) (any, error) { return nil, errNoLoad }

const schemaURL = "file:///values.schema.json"

// compileSchema compiles a values.schema.json; nothing is ever read from
// disk or the network (the JSON Schema meta-schemas are built in).
func compileSchema(data []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(refusingLoader{})
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, err
	}
	s, err := c.Compile(schemaURL)
	if err != nil {
		return nil, errors.New(strings.ReplaceAll(err.Error(), schemaURL, "values.schema.json"))
	}
	return s, nil
}

// validateValues checks values against a compiled schema and returns a
// readable message listing each violation with its location in the values.
func validateValues(s *jsonschema.Schema, values map[string]any) error {
	err := s.Validate(values)
	if err == nil {
		return nil
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return err
	}
	var msgs []string
	var walk func(u jsonschema.OutputUnit)
	walk = func(u jsonschema.OutputUnit) {
		if u.Error != nil && len(u.Errors) == 0 {
			loc := u.InstanceLocation
			if loc == "" {
				loc = "/"
			}
			msgs = append(msgs, fmt.Sprintf("at %s: %s", loc, u.Error.String()))
		}
		for _, c := range u.Errors {
			walk(c)
		}
	}
	walk(*verr.DetailedOutput())
	if len(msgs) == 0 {
		return errors.New(oneLine(verr.Error()))
	}
	sort.Strings(msgs)
	msgs = slices.Compact(msgs)
	return errors.New(strings.Join(msgs, "; "))
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	default:
		return "a number"
	}
}
