package render

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/yaml"
)

// Output is the result of a render: Kubernetes objects in canonical order
// (API group, kind, namespace, name, then version), each with an apiVersion,
// a kind and a metadata.name, none twice.
type Output struct {
	// Objects rendered by the bundle. They carry no ownerReferences; callers
	// add what they need.
	Objects []*unstructured.Unstructured
}

type objectKey struct {
	group, kind, namespace, name, version string
}

func keyOf(u *unstructured.Unstructured) objectKey {
	gv, _ := schema.ParseGroupVersion(u.GetAPIVersion())
	return objectKey{gv.Group, u.GetKind(), u.GetNamespace(), u.GetName(), gv.Version}
}

func (k objectKey) less(o objectKey) bool {
	a := [...]string{k.group, k.kind, k.namespace, k.name, k.version}
	b := [...]string{o.group, o.kind, o.namespace, o.name, o.version}
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

func sortObjects(objs []*unstructured.Unstructured) {
	sort.SliceStable(objs, func(i, j int) bool { return keyOf(objs[i]).less(keyOf(objs[j])) })
}

// YAML returns the objects as YAML documents separated by "---\n", in
// canonical order with sorted keys: the same objects always give the same
// bytes. No objects give no bytes.
func (o *Output) YAML() []byte {
	objs := append([]*unstructured.Unstructured(nil), o.Objects...)
	sortObjects(objs)
	var buf bytes.Buffer
	for i, obj := range objs {
		if i > 0 {
			buf.WriteString("---\n")
		}
		data, err := yaml.Marshal(obj.Object)
		if err != nil {
			// Only possible if a caller put non-JSON values in an object.
			fmt.Fprintf(&buf, "# cannot encode %s %s: %s\n", obj.GetKind(), obj.GetName(), oneLine(err.Error()))
			continue
		}
		buf.Write(data)
	}
	return buf.Bytes()
}

// Digest returns "sha256:" and the hex SHA-256 of YAML().
func (o *Output) Digest() string {
	sum := sha256.Sum256(o.YAML())
	return "sha256:" + hex.EncodeToString(sum[:])
}

type document struct {
	line int // 1-based line of the document's first line in the file
	text string
}

// splitDocuments splits a rendered file at YAML document separators ("---"
// at the start of a line), keeping each document's first line number.
func splitDocuments(text string) []document {
	var docs []document
	lines := strings.Split(text, "\n")
	cur := document{line: 1}
	var b strings.Builder
	for i, l := range lines {
		if strings.HasPrefix(l, "---") && (len(l) == 3 || l[3] == ' ' || l[3] == '\t' || l[3] == '\r') {
			cur.text = b.String()
			docs = append(docs, cur)
			b.Reset()
			cur = document{line: i + 1}
			// Content after "--- " on the same line belongs to the document.
			rest := strings.TrimSpace(l[3:])
			if rest != "" && !strings.HasPrefix(rest, "#") {
				b.WriteString(rest)
			}
			b.WriteString("\n")
			continue
		}
		b.WriteString(l)
		b.WriteString("\n")
	}
	cur.text = b.String()
	return append(docs, cur)
}

// firstContentLine is the line of the document's first line that is neither
// blank nor a comment.
func (d document) firstContentLine() int {
	for i, l := range strings.Split(d.text, "\n") {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") && t != "---" {
			return d.line + i
		}
	}
	return d.line
}

var yamlLineRE = regexp.MustCompile(`line (\d+): `)

// origin is where an object was rendered: its file and the first line of
// its document in the rendered output.
type origin struct {
	file string
	line int
}

// parseOutput turns the rendered files, by path in the bundle, into an
// Output, and says where each object comes from. A document larger than
// lim.MaxObjectBytes is refused before it is decoded, and so are objects
// past lim.MaxObjects.
func parseOutput(bundle string, rendered map[string]string, lim Limits) (*Output, map[*unstructured.Unstructured]origin, error) {
	files := make([]string, 0, len(rendered))
	for f := range rendered {
		files = append(files, f)
	}
	sort.Strings(files)
	out := &Output{}
	origins := map[*unstructured.Unstructured]origin{}
	seen := map[objectKey]string{}
	for _, file := range files {
		if path.Base(file) == "NOTES.txt" {
			continue
		}
		for _, doc := range splitDocuments(rendered[file]) {
			if len(doc.text) > lim.MaxObjectBytes {
				return nil, nil, outputError(bundle, ReasonLimit, file, doc.firstContentLine(), &detailError{sentinel: ErrObjectTooLarge,
					msg: fmt.Sprintf("a document of %d bytes, more than %d", len(doc.text), lim.MaxObjectBytes)})
			}
			obj, err := decodeDocument(doc)
			if err != nil {
				var le *lineError
				line := doc.firstContentLine()
				if errors.As(err, &le) {
					line = le.line
				}
				return nil, nil, newError(bundle, ReasonOutput, file, line, err)
			}
			if obj == nil {
				continue
			}
			u := &unstructured.Unstructured{Object: obj}
			k := keyOf(u)
			k.version = ""
			if prev, dup := seen[k]; dup {
				return nil, nil, newError(bundle, ReasonOutput, file, doc.firstContentLine(),
					fmt.Errorf("%s %s is rendered twice (also by %s)", u.GetKind(), objectName(u), prev))
			}
			seen[k] = file
			if len(out.Objects) == lim.MaxObjects {
				return nil, nil, outputError(bundle, ReasonLimit, file, doc.firstContentLine(), &detailError{sentinel: ErrTooManyObjects,
					msg: fmt.Sprintf("more than %d objects", lim.MaxObjects)})
			}
			out.Objects = append(out.Objects, u)
			origins[u] = origin{file: file, line: doc.firstContentLine()}
		}
	}
	sortObjects(out.Objects)
	return out, origins, nil
}

type lineError struct {
	line int
	err  error
}

func (e *lineError) Error() string { return e.err.Error() }
func (e *lineError) Unwrap() error { return e.err }

// decodeDocument decodes one YAML document into a checked object; an empty
// document gives nil.
func decodeDocument(doc document) (map[string]any, error) {
	j, err := yaml.YAMLToJSONStrict([]byte(doc.text))
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "error converting YAML to JSON: ")
		msg = strings.TrimPrefix(msg, "yaml: ")
		line := doc.firstContentLine()
		if m := yamlLineRE.FindStringSubmatchIndex(msg); m != nil {
			n, _ := strconv.Atoi(msg[m[2]:m[3]])
			line = doc.line + n - 1
			msg = msg[:m[0]] + msg[m[1]:]
		}
		msg = strings.TrimPrefix(strings.TrimSpace(strings.TrimPrefix(msg, "unmarshal errors:")), "- ")
		return nil, &lineError{line: line, err: fmt.Errorf("not valid YAML: %s", msg)}
	}
	j = bytes.TrimSpace(j)
	if len(j) == 0 || string(j) == "null" {
		return nil, nil
	}
	var v any
	if err := utiljson.Unmarshal(j, &v); err != nil {
		return nil, fmt.Errorf("not valid YAML: %w", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("a document is %s, not a Kubernetes object", jsonKind(v))
	}
	return obj, checkObject(obj)
}

// checkObject checks the fields every Kubernetes object needs.
func checkObject(obj map[string]any) error {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	if apiVersion == "" {
		return fmt.Errorf("object has no apiVersion (kind %q)", kind)
	}
	if _, err := schema.ParseGroupVersion(apiVersion); err != nil {
		return fmt.Errorf("object has an invalid apiVersion %q", apiVersion)
	}
	if kind == "" {
		return fmt.Errorf("object has no kind (apiVersion %q)", apiVersion)
	}
	meta, ok := obj["metadata"].(map[string]any)
	if !ok {
		return fmt.Errorf("%s has no metadata", kind)
	}
	// A null is the same as no field for the API server: drop it, so that
	// "namespace: {{ .Release.Namespace }}" with no namespace is valid.
	for _, field := range []string{"namespace", "labels", "annotations"} {
		if v, ok := meta[field]; ok && v == nil {
			delete(meta, field)
		}
	}
	name, isString := meta["name"].(string)
	if meta["name"] != nil && !isString {
		return fmt.Errorf("%s: metadata.name is %s, not a string (quote it)", kind, jsonKind(meta["name"]))
	}
	if name == "" {
		return fmt.Errorf("%s has no metadata.name", kind)
	}
	if ns, ok := meta["namespace"]; ok {
		if _, isString := ns.(string); !isString {
			return fmt.Errorf("%s %s: metadata.namespace is %s, not a string (quote it)", kind, name, jsonKind(ns))
		}
	}
	for _, field := range []string{"labels", "annotations"} {
		raw, ok := meta[field]
		if !ok {
			continue
		}
		m, ok := raw.(map[string]any)
		if !ok {
			return fmt.Errorf("%s %s: metadata.%s is %s, not a mapping", kind, name, field, jsonKind(raw))
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if _, isString := m[k].(string); !isString {
				return fmt.Errorf("%s %s: metadata.%s[%q] is %s, not a string (quote it)", kind, name, field, k, jsonKind(m[k]))
			}
		}
	}
	return nil
}

func objectName(u *unstructured.Unstructured) string {
	if ns := u.GetNamespace(); ns != "" {
		return ns + "/" + u.GetName()
	}
	return u.GetName()
}
