package values

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// Sveltos, to which k0rdent's ServiceSet adapter hands a service's values,
// runs their text through Go's text/template (with sprig and functions that
// read management-cluster objects) before it parses them as YAML, once or
// twice depending on its version; docs/security.md has the evidence. Marshal
// therefore writes tenant text so that no template pass sees a delimiter in
// it, and so that the YAML parser restores it byte for byte.

// Verbatim is a string that a WorkspaceClass administrator wrote. Marshal
// writes it as it is, template syntax included, so that Sveltos can
// instantiate it; every other string is tenant data, or derived from it,
// and is escaped.
type Verbatim string

// MarkVerbatim returns a deep copy of values in which every string value
// that holds a template delimiter ({{ or }}) is a Verbatim. It is meant for
// values written by a class administrator: defaultValues and prerequisite
// values. Keys are never verbatim. values is not modified.
func MarkVerbatim(values map[string]any) map[string]any {
	if values == nil {
		return nil
	}
	out, _ := markVerbatim(values).(map[string]any)
	return out
}

func markVerbatim(v any) any {
	switch t := v.(type) {
	case string:
		if hasDelimiter(t) {
			return Verbatim(t)
		}
		return t
	case map[string]any:
		if t == nil {
			return t
		}
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = markVerbatim(e)
		}
		return out
	case []any:
		if t == nil {
			return t
		}
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = markVerbatim(e)
		}
		return out
	default:
		return deepCopy(v)
	}
}

// Marshal renders values as the ServiceSet's values string: compact JSON
// with sorted keys, the bytes of encoding/json (and of the exalsius
// operator), except that in every key and every string but a Verbatim the
// braces of "{{" and "}}" are written as the escapes \u007b and \u007d.
// No template pass, however many Sveltos makes, sees a delimiter in such
// text, and every JSON or YAML parser reads the escapes back as braces, so
// the chart receives the string as written. Equal values give equal
// strings; "" for an empty or nil map.
func Marshal(values map[string]any) (string, error) {
	if len(values) == 0 {
		return "", nil
	}
	var b bytes.Buffer
	if err := encode(&b, values); err != nil {
		return "", fmt.Errorf("encoding values as JSON: %w", err)
	}
	return b.String(), nil
}

// MarshalSecret renders the values of a values Secret: YAML as
// sigs.k8s.io/yaml writes it when no key or string but a Verbatim holds a
// template delimiter, else Marshal's JSON, which is YAML too and keeps the
// escapes. An error never quotes a value.
func MarshalSecret(values map[string]any) (string, error) {
	escaped, err := Marshal(values)
	if err != nil {
		return "", fmt.Errorf("encoding the secret values failed")
	}
	plain, err := json.Marshal(values)
	if err != nil {
		return "", fmt.Errorf("encoding the secret values failed")
	}
	if escaped != "" && escaped != string(plain) {
		return escaped, nil
	}
	doc, err := yaml.Marshal(values)
	if err != nil {
		return "", fmt.Errorf("encoding the secret values failed")
	}
	return string(doc), nil
}

// encode writes v as encoding/json would, escaping delimiters in keys and
// in strings that are not Verbatim.
func encode(b *bytes.Buffer, v any) error {
	switch t := v.(type) {
	case nil:
		b.WriteString("null")
		return nil
	case Verbatim:
		return writeJSON(b, string(t), false)
	case string:
		return writeJSON(b, t, true)
	case bool, float64, float32, int, int8, int16, int32, int64,
		uint, uint8, uint16, uint32, uint64, json.Number:
		return writeJSON(b, t, false)
	case map[string]any:
		if t == nil {
			b.WriteString("null")
			return nil
		}
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeJSON(b, k, true); err != nil {
				return err
			}
			b.WriteByte(':')
			if err := encode(b, t[k]); err != nil {
				return err
			}
		}
		b.WriteByte('}')
		return nil
	case []any:
		if t == nil {
			b.WriteString("null")
			return nil
		}
		b.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := encode(b, e); err != nil {
				return err
			}
		}
		b.WriteByte(']')
		return nil
	default:
		// Other types (map[string]string, ...) as encoding/json sees
		// them: decoded into the types above, then encoded.
		data, err := json.Marshal(t)
		if err != nil {
			return err
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var n any
		if err := dec.Decode(&n); err != nil {
			return err
		}
		return encode(b, n)
	}
}

// writeJSON writes encoding/json's encoding of v, with the delimiters
// escaped when escape is set.
func writeJSON(b *bytes.Buffer, v any, escape bool) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if escape {
		data = escapeDelimiters(data)
	}
	b.Write(data)
	return nil
}

// delimiterEscapes writes the braces of the template delimiters as JSON
// escapes. Inside a JSON string the replacement is always valid: a brace
// never follows an escaping backslash in encoding/json's output.
var delimiterEscapes = strings.NewReplacer("{{", `\u007b\u007b`, "}}", `\u007d\u007d`)

// escapeDelimiters escapes the delimiters in one encoded JSON string.
func escapeDelimiters(data []byte) []byte {
	if !bytes.Contains(data, []byte("{{")) && !bytes.Contains(data, []byte("}}")) {
		return data
	}
	return []byte(delimiterEscapes.Replace(string(data)))
}

// hasDelimiter reports whether s holds a template delimiter.
func hasDelimiter(s string) bool {
	return strings.Contains(s, "{{") || strings.Contains(s, "}}")
}
