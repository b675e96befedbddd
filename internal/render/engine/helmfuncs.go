package engine

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"path"
	"strings"

	"github.com/BurntSushi/toml"
	"github.com/gobwas/glob"
	yamlv3 "go.yaml.in/yaml/v3"
	"helm.sh/helm/v3/pkg/chart"
	"sigs.k8s.io/yaml"
)

// helmFuncs are the functions Helm adds to sprig's, with Helm's behaviour:
// encoders return "" on error, decoders put the error under "Error" (or as
// the only element of a list).
func helmFuncs() map[string]any {
	return map[string]any{
		"toToml":        toTOML,
		"fromToml":      fromTOML,
		"toYaml":        toYAML,
		"toYamlPretty":  toYAMLPretty,
		"fromYaml":      fromYAML,
		"fromYamlArray": fromYAMLArray,
		"toJson":        toJSON,
		"fromJson":      fromJSON,
		"fromJsonArray": fromJSONArray,
		"required":      required,
		"fail":          failFunc,
		"lookup":        lookup,
	}
}

func toYAML(v any) string {
	data, err := yaml.Marshal(v)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(data), "\n")
}

func toYAMLPretty(v any) string {
	var buf bytes.Buffer
	enc := yamlv3.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(v); err != nil {
		return ""
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

func fromYAML(s string) map[string]any {
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(s), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

func fromYAMLArray(s string) []any {
	l := []any{}
	if err := yaml.Unmarshal([]byte(s), &l); err != nil {
		return []any{err.Error()}
	}
	return l
}

func toTOML(v any) string {
	var buf bytes.Buffer
	if err := toml.NewEncoder(&buf).Encode(v); err != nil {
		return err.Error()
	}
	return buf.String()
}

func fromTOML(s string) map[string]any {
	m := map[string]any{}
	if err := toml.Unmarshal([]byte(s), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

func toJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(data)
}

func fromJSON(s string) map[string]any {
	m := map[string]any{}
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

func fromJSONArray(s string) []any {
	l := []any{}
	if err := json.Unmarshal([]byte(s), &l); err != nil {
		return []any{err.Error()}
	}
	return l
}

// files is .Files: the chart's files other than Chart.yaml, values.yaml,
// values.schema.json and templates/, by path, with Helm's methods. Its
// methods allocate no more than their result, which the functions that keep
// or print it charge.
type files map[string][]byte

func newFiles(from []*chart.File) files {
	f := files{}
	for _, file := range from {
		f[file.Name] = file.Data
	}
	return f
}

// GetBytes returns the file at name, or nothing.
func (f files) GetBytes(name string) []byte {
	if data, ok := f[name]; ok {
		return data
	}
	return []byte{}
}

// Get returns the file at name as a string, or "".
func (f files) Get(name string) string { return string(f.GetBytes(name)) }

// Glob returns the files whose path matches pattern ("*" stops at "/",
// "**" does not); an invalid pattern matches every file.
func (f files) Glob(pattern string) files {
	g, err := glob.Compile(pattern, '/')
	if err != nil {
		g, _ = glob.Compile("**")
	}
	out := files{}
	for name, data := range f {
		if g.Match(name) {
			out[name] = data
		}
	}
	return out
}

// AsConfig returns the files as the YAML data of a ConfigMap, keyed by base
// name.
func (f files) AsConfig() string {
	if f == nil {
		return ""
	}
	m := map[string]string{}
	for name, data := range f {
		m[path.Base(name)] = string(data)
	}
	return toYAML(m)
}

// AsSecrets returns the files base64-encoded as the YAML data of a Secret,
// keyed by base name.
func (f files) AsSecrets() string {
	if f == nil {
		return ""
	}
	m := map[string]string{}
	for name, data := range f {
		m[path.Base(name)] = base64.StdEncoding.EncodeToString(data)
	}
	return toYAML(m)
}

// Lines returns the lines of the file at name, without a final empty line.
func (f files) Lines(name string) []string {
	if f == nil || len(f[name]) == 0 {
		return []string{}
	}
	s := strings.TrimSuffix(string(f[name]), "\n")
	return strings.Split(s, "\n")
}
