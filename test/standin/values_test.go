package standin

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
)

func TestParseValues(t *testing.T) {
	tests := []struct {
		name    string
		doc     string
		want    map[string]any
		wantErr bool
	}{
		{name: "empty", doc: "", want: map[string]any{}},
		{name: "null", doc: "null", want: map[string]any{}},
		{name: "yaml", doc: "a: 1\nb:\n  c: x\n", want: map[string]any{"a": 1.0, "b": map[string]any{"c": "x"}}},
		{name: "json", doc: `{"a":[1,"x"]}`, want: map[string]any{"a": []any{1.0, "x"}}},
		{name: "list", doc: "- a\n- b\n", wantErr: true},
		{name: "scalar", doc: "hello", wantErr: true},
		{name: "broken", doc: "a: [", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := ParseValues([]byte(tt.doc))
			if tt.wantErr {
				g.Expect(err).To(HaveOccurred())
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tt.want))
		})
	}
}

func TestMergeValues(t *testing.T) {
	tests := []struct {
		name          string
		dst, src, out string
	}{
		{name: "into empty", dst: "", src: "a: 1", out: `{"a":1}`},
		{name: "disjoint", dst: "a: 1", src: "b: 2", out: `{"a":1,"b":2}`},
		{name: "later wins", dst: "a: 1", src: "a: 2", out: `{"a":2}`},
		{name: "maps merge deeply", dst: "m: {a: 1, p: {x: 1}}", src: "m: {b: 2, p: {z: 2}}", out: `{"m":{"a":1,"b":2,"p":{"x":1,"z":2}}}`},
		{name: "lists are replaced", dst: "l: [1, 2]", src: "l: [3]", out: `{"l":[3]}`},
		{name: "map replaces scalar", dst: "a: 1", src: "a: {b: 1}", out: `{"a":{"b":1}}`},
		{name: "scalar replaces map", dst: "a: {b: 1}", src: "a: 1", out: `{"a":1}`},
		{name: "null replaces", dst: "a: 1", src: "a: null", out: `{"a":null}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			dst, err := ParseValues([]byte(tt.dst))
			g.Expect(err).NotTo(HaveOccurred())
			src, err := ParseValues([]byte(tt.src))
			g.Expect(err).NotTo(HaveOccurred())
			got, err := json.Marshal(MergeValues(dst, src))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(MatchJSON(tt.out))
		})
	}
}

func TestMergeValuesDoesNotAliasSource(t *testing.T) {
	g := NewWithT(t)
	src := map[string]any{"m": map[string]any{"a": 1.0}}
	out := MergeValues(nil, src)
	out["m"].(map[string]any)["b"] = 2.0
	g.Expect(src).To(Equal(map[string]any{"m": map[string]any{"a": 1.0}}))
}

// FuzzMergeValues checks that parsing never panics and that merging keeps
// every key of both sides, with the source's value wherever it is no map.
func FuzzMergeValues(f *testing.F) {
	f.Add("a: 1\nm: {x: 1}", "b: 2\nm: {y: [1]}")
	f.Add(`{"a":{"b":{"c":1}}}`, `{"a":{"b":2}}`)
	f.Add("", "- x")
	f.Fuzz(func(t *testing.T, a, b string) {
		dst, err := ParseValues([]byte(a))
		if err != nil {
			return
		}
		src, err := ParseValues([]byte(b))
		if err != nil {
			return
		}
		before, err := json.Marshal(src)
		if err != nil {
			return
		}
		keys := map[string]bool{}
		for k := range dst {
			keys[k] = true
		}
		out := MergeValues(dst, src)
		for k, v := range src {
			if _, isMap := v.(map[string]any); isMap {
				if _, ok := out[k].(map[string]any); !ok {
					t.Fatalf("key %q: a map in the source gave %T", k, out[k])
				}
				continue
			}
			want, _ := json.Marshal(v)
			got, _ := json.Marshal(out[k])
			if string(want) != string(got) {
				t.Fatalf("key %q: got %s, want %s", k, got, want)
			}
		}
		for k := range keys {
			if _, ok := out[k]; !ok {
				t.Fatalf("key %q of the destination was lost", k)
			}
		}
		after, _ := json.Marshal(src)
		if string(before) != string(after) {
			t.Fatalf("merging changed the source: %s became %s", before, after)
		}
		// Merging the source again changes nothing.
		once, _ := json.Marshal(out)
		twice, _ := json.Marshal(MergeValues(out, src))
		if string(once) != string(twice) {
			t.Fatalf("merge is not idempotent: %s then %s", once, twice)
		}
	})
}
