package values

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
)

func TestParsePath(t *testing.T) {
	tests := []struct {
		path    string
		want    []string
		wantErr string // substring of the message
		wantPos int
	}{
		{path: "a", want: []string{"a"}},
		{path: "jupyterhub.singleuser.memory.limit", want: []string{"jupyterhub", "singleuser", "memory", "limit"}},
		{path: `a.b["nvidia.com/gpu"]`, want: []string{"a", "b", "nvidia.com/gpu"}},
		{path: `x["a.b"].y`, want: []string{"x", "a.b", "y"}},
		{path: `["a.b"]`, want: []string{"a.b"}},
		{path: `a["b"]["c"].d`, want: []string{"a", "b", "c", "d"}},
		{path: `a['it''s']`, wantErr: "expected ']' after the quoted key", wantPos: 7},
		{path: `a['x.y']`, want: []string{"a", "x.y"}},
		{path: `a["say \"hi\""]`, want: []string{"a", `say "hi"`}},
		{path: `a["back\\slash"]`, want: []string{"a", `back\slash`}},
		{path: `a["it's"]`, want: []string{"a", "it's"}},
		{path: `a["]"]`, want: []string{"a", "]"}},
		{path: "_exalsius.resources.perReplica.cpu", want: []string{"_exalsius", "resources", "perReplica", "cpu"}},
		{path: "kubernetes.io/os", want: []string{"kubernetes", "io/os"}},
		{path: "a-b.c_d.0", want: []string{"a-b", "c_d", "0"}},
		{path: "größe.ü", want: []string{"größe", "ü"}},

		{path: "", wantErr: "empty path", wantPos: 1},
		{path: ".a", wantErr: "empty segment", wantPos: 1},
		{path: "a..b", wantErr: "empty segment", wantPos: 3},
		{path: "a.", wantErr: "trailing dot", wantPos: 2},
		{path: "a.b.", wantErr: "trailing dot", wantPos: 4},
		{path: `a.["b"]`, wantErr: "empty segment", wantPos: 3},
		{path: `a[`, wantErr: "unterminated bracket", wantPos: 2},
		{path: `a["b`, wantErr: "unterminated quote", wantPos: 2},
		{path: `a["b"`, wantErr: "unterminated bracket", wantPos: 2},
		{path: `a["b"x`, wantErr: "expected ']' after the quoted key", wantPos: 6},
		{path: `a["b\`, wantErr: "unterminated quote", wantPos: 2},
		{path: `a[0]`, wantErr: "unquoted bracket content", wantPos: 3},
		{path: `a[b]`, wantErr: "unquoted bracket content", wantPos: 3},
		{path: `a[]`, wantErr: "empty brackets", wantPos: 3},
		{path: `a[""]`, wantErr: "empty segment", wantPos: 3},
		{path: `a["b"]c`, wantErr: "expected '.' or '['", wantPos: 7},
		{path: `a["\n"]`, wantErr: "invalid escape", wantPos: 4},
		{path: `a]`, wantErr: `unexpected ']'`, wantPos: 2},
		{path: `a b`, wantErr: `unexpected ' '`, wantPos: 2},
		{path: `a."b"`, wantErr: `unexpected '"'`, wantPos: 3},
		{path: "a.\tb", wantErr: `unexpected '\t'`, wantPos: 3},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			g := NewWithT(t)
			got, err := ParsePath(tt.path)
			if tt.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(got).To(Equal(tt.want))
				// FormatPath renders a path that parses back to the same keys.
				again, err := ParsePath(FormatPath(got))
				g.Expect(err).NotTo(HaveOccurred(), FormatPath(got))
				g.Expect(again).To(Equal(got))
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
			var pe *PathError
			g.Expect(errors.As(err, &pe)).To(BeTrue())
			g.Expect(pe.Pos).To(Equal(tt.wantPos), err.Error())
			g.Expect(err.Error()).To(ContainSubstring("path %q", tt.path))
		})
	}
}

func TestFormatPath(t *testing.T) {
	tests := []struct {
		path []string
		want string
	}{
		{[]string{"a", "b"}, "a.b"},
		{[]string{"resources", "limits", "nvidia.com/gpu"}, `resources.limits["nvidia.com/gpu"]`},
		{[]string{"io/os"}, `["io/os"]`},
		{[]string{"a b", `q"uote`, `back\`}, `["a b"]["q\"uote"]["back\\"]`},
		{nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			NewWithT(t).Expect(FormatPath(tt.path)).To(Equal(tt.want))
		})
	}
}

func TestSetPath(t *testing.T) {
	tests := []struct {
		name        string
		values      string
		path        []string
		want        string
		wantPrev    any
		wantExisted bool
	}{
		{name: "creates intermediate maps", values: `{}`, path: []string{"a", "b", "c"}, want: `{"a":{"b":{"c":"v"}}}`},
		{name: "keeps siblings", values: `{a: {x: 1}}`, path: []string{"a", "b"}, want: `{"a":{"x":1,"b":"v"}}`},
		{
			name: "replaces the old value and returns it", values: `{a: {b: old}}`, path: []string{"a", "b"},
			want: `{"a":{"b":"v"}}`, wantPrev: "old", wantExisted: true,
		},
		{
			name: "a null counts as existing", values: `{a: null}`, path: []string{"a"},
			want: `{"a":"v"}`, wantExisted: true,
		},
		{
			name: "replaces a non-map value on the way and returns it", values: `{a: {b: "2"}}`, path: []string{"a", "b", "limit"},
			want: `{"a":{"b":{"limit":"v"}}}`, wantPrev: "2", wantExisted: true,
		},
		{
			name: "replaces a list on the way", values: `{a: [1]}`, path: []string{"a", "b"},
			want: `{"a":{"b":"v"}}`, wantPrev: []any{float64(1)}, wantExisted: true,
		},
		{
			name: "replaces a map at the path", values: `{a: {b: {c: 1}}}`, path: []string{"a", "b"},
			want: `{"a":{"b":"v"}}`, wantPrev: map[string]any{"c": float64(1)}, wantExisted: true,
		},
		{name: "an empty path writes nothing", values: `{a: 1}`, want: `{"a":1}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			values := obj(t, tt.values)
			prev, existed := SetPath(values, tt.path, "v")
			g.Expect(js(t, values)).To(MatchJSON(tt.want))
			g.Expect(existed).To(Equal(tt.wantExisted))
			if tt.wantPrev == nil {
				g.Expect(prev).To(BeNil())
			} else {
				g.Expect(prev).To(Equal(tt.wantPrev))
			}
		})
	}

	t.Run("nil values", func(t *testing.T) {
		g := NewWithT(t)
		prev, existed := SetPath(nil, []string{"a"}, 1)
		g.Expect(prev).To(BeNil())
		g.Expect(existed).To(BeFalse())
	})
}

func TestLookupPath(t *testing.T) {
	g := NewWithT(t)
	values := obj(t, `{a: {b: {c: 1}, s: x}, nul: null}`)
	v, ok := LookupPath(values, []string{"a", "b", "c"})
	g.Expect(ok).To(BeTrue())
	g.Expect(v).To(Equal(float64(1)))
	v, ok = LookupPath(values, []string{"nul"})
	g.Expect(ok).To(BeTrue())
	g.Expect(v).To(BeNil())
	_, ok = LookupPath(values, []string{"a", "s", "x"})
	g.Expect(ok).To(BeFalse())
	_, ok = LookupPath(values, []string{"a", "missing"})
	g.Expect(ok).To(BeFalse())
	_, ok = LookupPath(values, nil)
	g.Expect(ok).To(BeFalse())
	_, ok = LookupPath(nil, []string{"a"})
	g.Expect(ok).To(BeFalse())
}
