package values

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"text/template"
	"unicode/utf8"

	"github.com/Masterminds/sprig/v3"
	. "github.com/onsi/gomega"
	yamlv3 "gopkg.in/yaml.v3"
	"sigs.k8s.io/yaml"
)

// sveltosData stands for what Sveltos gives a template: the cluster and
// the management-cluster objects of templateResourceRefs.
var sveltosData = map[string]any{
	"Cluster":       map[string]any{"metadata": map[string]any{"name": "child-1"}},
	"MgmtResources": map[string]any{"Identity": map[string]any{"data": map[string]any{"token": "c2VjcmV0"}}},
}

// instantiate runs text through Go's text/template with sprig, as Sveltos
// instantiates a HelmChart's values (missingkey=error, default delimiters).
func instantiate(text string) (string, error) {
	tmpl, err := template.New("values").Option("missingkey=error").Funcs(sprig.TxtFuncMap()).Parse(text)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, sveltosData); err != nil {
		return "", err
	}
	return b.String(), nil
}

// instantiateField is the extra pass of newer Sveltos versions, which
// instantiate every field of a HelmChart, values included, by encoding it
// as YAML, running the template and decoding the result.
func instantiateField(text string) (string, error) {
	var b bytes.Buffer
	if err := yamlv3.NewEncoder(&b).Encode(text); err != nil {
		return "", err
	}
	out, err := instantiate(b.String())
	if err != nil {
		return "", err
	}
	var s string
	err = yamlv3.Unmarshal([]byte(out), &s)
	return s, err
}

// sveltosValues is what a chart receives from values text after one
// template pass (older Sveltos) and after two (newer Sveltos), parsed by
// both YAML libraries Sveltos versions use; the results must agree.
func sveltosValues(t *testing.T, text string) map[string]any {
	t.Helper()
	once, err := instantiate(text)
	if err != nil {
		t.Fatalf("template pass failed: %v\n%s", err, text)
	}
	field, err := instantiateField(text)
	if err != nil {
		t.Fatalf("field pass failed: %v\n%s", err, text)
	}
	twice, err := instantiate(field)
	if err != nil {
		t.Fatalf("second pass failed: %v\n%s", err, field)
	}
	var results []map[string]any
	for _, out := range []string{once, twice} {
		var a, b map[string]any
		if err := yaml.Unmarshal([]byte(out), &a); err != nil {
			t.Fatalf("sigs.k8s.io/yaml cannot parse %q: %v", out, err)
		}
		if err := yamlv3.Unmarshal([]byte(out), &b); err != nil {
			t.Fatalf("yaml.v3 cannot parse %q: %v", out, err)
		}
		results = append(results, a, normalize(t, b))
	}
	for _, r := range results[1:] {
		if !reflect.DeepEqual(r, results[0]) {
			t.Fatalf("the passes and parsers disagree:\n%v\n%v", results[0], r)
		}
	}
	return results[0]
}

// normalize passes v through JSON, as sigs.k8s.io/yaml does.
func normalize(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// FuzzTenantTextSurvivesSveltos: whatever a tenant writes, in keys or
// values, Marshal's text holds no template delimiter, and after Sveltos's
// template passes the chart receives exactly the tenant's bytes.
func FuzzTenantTextSurvivesSveltos(f *testing.F) {
	for _, seed := range []string{
		"{{ .Cluster.metadata.name }}", `{{ (getResource "Identity").data }}`, "}}{{", "{{{", "}}}", "{{-", " -}}",
		"`{{`", `{{ "{{" }}`, `'{{'"}}"`, `\{{\`, `{{/* c */}}`, "a{b}c", "{", "}", "plain", "", `\u007b\u007b`,
		"{{ env \"HOME\" }}", "<&>", "ü{{ü", "line\n{{ x }}\nline",
	} {
		f.Add(seed, "key"+seed)
	}
	f.Fuzz(func(t *testing.T, s, k string) {
		if !utf8.ValidString(s) || !utf8.ValidString(k) || k == "v" {
			// encoding/json writes U+FFFD for invalid bytes, escaped or
			// not; the key "v" is taken.
			return
		}
		tree := map[string]any{"v": s, k: map[string]any{s: []any{s, 1.5, true, nil}}}
		plain, err := json.Marshal(tree)
		if err != nil {
			t.Fatal(err)
		}
		var parsed map[string]any
		if yaml.Unmarshal(plain, &parsed) != nil || yamlv3.Unmarshal(plain, &map[string]any{}) != nil {
			return // characters YAML does not accept raw; not a template matter
		}
		text, err := Marshal(tree)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		if strings.Contains(text, "{{") {
			t.Fatalf("a left delimiter reached the text: %s", text)
		}
		if !hasDelimiter(s) && !hasDelimiter(k) && text != string(plain) {
			t.Fatalf("text without delimiters differs from encoding/json:\n%s\n%s", text, plain)
		}
		got := sveltosValues(t, text)
		if got["v"] != s {
			t.Fatalf("value %q arrived as %q", s, got["v"])
		}
		if !reflect.DeepEqual(got, normalize(t, tree)) {
			t.Fatalf("values arrived as %v, want %v", got, tree)
		}
	})
}

func TestMarshal(t *testing.T) {
	g := NewWithT(t)

	s, err := Marshal(nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s).To(BeEmpty())

	// Keys are sorted at every level, whatever the insertion order; other
	// map types are written as encoding/json writes them.
	s, err = Marshal(map[string]any{"b": map[string]any{"z": 1, "a": 2}, "a": []any{"x", 1.5}, "_exalsius": true,
		"sel": map[string]string{"y": "1", "x": "<&>"}, "n": nil, "m": map[string]any(nil), "l": []any(nil)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s).To(Equal(`{"_exalsius":true,"a":["x",1.5],"b":{"a":2,"z":1},"l":null,"m":null,"n":null,` +
		`"sel":{"x":"\u003c\u0026\u003e","y":"1"}}`))

	// Delimiters are escaped in keys and strings, never in structure.
	s, err = Marshal(map[string]any{"{{k}}": map[string]any{"a": "x}}y{{{z"}, "sel": map[string]string{"m": "{{ y }}"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(s).To(Equal(`{"sel":{"m":"\u007b\u007b y \u007d\u007d"},"\u007b\u007bk\u007d\u007d":{"a":"x\u007d\u007dy\u007b\u007b{z"}}`))

	_, err = Marshal(map[string]any{"a": 1.0, "b": []any{map[string]any{"c": func() {}}}})
	g.Expect(err).To(MatchError(ContainSubstring("encoding values as JSON")))
}

// A class administrator's template is written as it is, and Sveltos
// instantiates it; a tenant's text beside it stays text. (The values are
// JSON, whose strings escape double quotes: a template quotes with
// backticks.)
func TestVerbatimStaysATemplate(t *testing.T) {
	g := NewWithT(t)
	class := map[string]any{"cluster": "{{ .Cluster.metadata.name }}", "list": []any{"{{ upper `a` }}", "b"}, "plain": "x"}
	marked := MarkVerbatim(class)
	g.Expect(marked["cluster"]).To(Equal(Verbatim("{{ .Cluster.metadata.name }}")))
	g.Expect(marked["plain"]).To(Equal("x"))
	g.Expect(class["cluster"]).To(Equal("{{ .Cluster.metadata.name }}"), "the input was modified")

	tree := MergeValues(marked, map[string]any{"tenant": "{{ .Cluster.metadata.name }}"})
	text, err := Marshal(tree)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(text).To(ContainSubstring(`"cluster":"{{ .Cluster.metadata.name }}"`))
	g.Expect(sveltosValues(t, text)).To(Equal(map[string]any{
		"cluster": "child-1", "list": []any{"A", "b"}, "plain": "x", "tenant": "{{ .Cluster.metadata.name }}",
	}))
	g.Expect(MarkVerbatim(nil)).To(BeNil())
}

func TestMarshalSecret(t *testing.T) {
	g := NewWithT(t)
	doc, err := MarshalSecret(map[string]any{"auth": map[string]any{"password": "pw"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(doc).To(Equal("auth:\n  password: pw\n"), "plain secret values stay YAML")

	doc, err = MarshalSecret(map[string]any{"auth": map[string]any{"password": "p{{w}}"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(doc).To(Equal(`{"auth":{"password":"p\u007b\u007bw\u007d\u007d"}}`))
	g.Expect(sveltosValues(t, doc)).To(Equal(map[string]any{"auth": map[string]any{"password": "p{{w}}"}}))

	_, err = MarshalSecret(map[string]any{"a": func() {}})
	g.Expect(err).To(MatchError("encoding the secret values failed"))
}

func TestEquivalentTemplates(t *testing.T) {
	g := NewWithT(t)
	// The exalsius operator wrote the tenant's text raw: Sveltos would run
	// it, so it is not the escaped text Apiary renders.
	g.Expect(Equivalent(`{"a":"{{ x }}"}`, `{"a":"\u007b\u007b x \u007d\u007d"}`)).To(BeFalse())
	g.Expect(Equivalent(`{"a":"{{ x }}"}`, `{"a":"{{ x }}"}`)).To(BeTrue())
	g.Expect(Equivalent(`{"a":"\u007b"}`, `{"a":"{"}`)).To(BeTrue())
}
