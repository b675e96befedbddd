// Command chartreadme writes the values table of the chart's README
// (charts/apiary/README.md) from values.yaml: each value with its type, its
// default and the "# --" comment above it, between the README's
// <!-- values:begin --> and <!-- values:end --> markers.
//
//	go run ./hack/chartreadme
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

const (
	beginMarker = "<!-- values:begin -->"
	endMarker   = "<!-- values:end -->"
)

func main() {
	chart := flag.String("chart", "charts/apiary", "The chart's folder.")
	flag.Parse()
	if err := run(*chart); err != nil {
		fmt.Fprintf(os.Stderr, "chartreadme: %v\n", err)
		os.Exit(1)
	}
}

func run(chart string) error {
	readme, err := render(chart)
	if err != nil {
		return err
	}
	return os.WriteFile(chart+"/README.md", readme, 0o644)
}

// render returns the chart's README with the values table regenerated.
func render(chart string) ([]byte, error) {
	values, err := os.ReadFile(chart + "/values.yaml")
	if err != nil {
		return nil, fmt.Errorf("reading values.yaml: %w", err)
	}
	table, err := valuesTable(values)
	if err != nil {
		return nil, err
	}
	readme, err := os.ReadFile(chart + "/README.md")
	if err != nil {
		return nil, fmt.Errorf("reading README.md: %w", err)
	}
	begin, end := bytes.Index(readme, []byte(beginMarker)), bytes.Index(readme, []byte(endMarker))
	if begin < 0 || end < begin {
		return nil, fmt.Errorf("README.md lacks %s ... %s", beginMarker, endMarker)
	}
	var out bytes.Buffer
	out.Write(readme[:begin+len(beginMarker)])
	out.WriteString("\n")
	out.Write(table)
	out.Write(readme[end:])
	return out.Bytes(), nil
}

// valuesTable renders the rows of values.yaml's values.
func valuesTable(data []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("parsing values.yaml: %w", err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("values.yaml is not a mapping")
	}
	var b bytes.Buffer
	b.WriteString("| Key | Type | Default | Description |\n|---|---|---|---|\n")
	if err := rows(&b, "", doc.Content[0]); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// rows writes a row per value of m: a value with a "# --" comment is one
// row, a mapping without one is described by its own values.
func rows(b *bytes.Buffer, prefix string, m *yaml.Node) error {
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		key := prefix + k.Value
		desc, documented := description(k.HeadComment)
		if v.Kind == yaml.MappingNode && len(v.Content) > 0 && !documented {
			if err := rows(b, key+".", v); err != nil {
				return err
			}
			continue
		}
		def, err := defaultOf(v)
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		fmt.Fprintf(b, "| `%s` | %s | `%s` | %s |\n", key, typeOf(v), def, cell.Replace(desc))
	}
	return nil
}

// cell escapes what Markdown would take for a column or an HTML tag.
var cell = strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;")

// description is the text of a "# --" comment and the comment lines after
// it, on one line.
func description(comment string) (string, bool) {
	lines := strings.Split(comment, "\n")
	for i, l := range lines {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "# --"); ok {
			words := strings.Fields(rest)
			for _, more := range lines[i+1:] {
				words = append(words, strings.Fields(strings.TrimPrefix(strings.TrimSpace(more), "#"))...)
			}
			return strings.Join(words, " "), true
		}
	}
	return "", false
}

func typeOf(v *yaml.Node) string {
	switch v.Kind {
	case yaml.MappingNode:
		return "object"
	case yaml.SequenceNode:
		return "list"
	}
	switch v.Tag {
	case "!!int":
		return "int"
	case "!!bool":
		return "bool"
	case "!!float":
		return "float"
	case "!!null":
		return "null"
	}
	return "string"
}

// defaultOf is the value as compact JSON.
func defaultOf(v *yaml.Node) (string, error) {
	var x any
	if err := v.Decode(&x); err != nil {
		return "", err
	}
	out, err := json.Marshal(x)
	if err != nil {
		return "", err
	}
	return strings.ReplaceAll(string(out), "|", `\|`), nil
}
