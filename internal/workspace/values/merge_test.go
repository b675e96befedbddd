package values

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestMergeValues(t *testing.T) {
	tests := []struct {
		name        string
		class, user string
		want        string // Marshal of the result
	}{
		{name: "nil and nil give no values", want: ""},
		{name: "empty and empty give no values", class: `{}`, user: `{}`, want: ""},
		{
			name:  "class defaults without overrides",
			class: `{image: {tag: "1.0"}, auth: {enabled: true}}`,
			want:  `{"auth":{"enabled":true},"image":{"tag":"1.0"}}`,
		},
		{
			name: "user values without class defaults",
			user: `{replicaCount: 2}`,
			want: `{"replicaCount":2}`,
		},
		{
			name:  "the user wins at the top level",
			class: `{image: {tag: "1.0"}, debug: false}`,
			user:  `{debug: true}`,
			want:  `{"debug":true,"image":{"tag":"1.0"}}`,
		},
		{
			name:  "a user top-level key replaces the class's map whole (shallow merge)",
			class: `{image: {repository: jupyter/base, tag: "1.0"}}`,
			user:  `{image: {tag: "2.0"}}`,
			want:  `{"image":{"tag":"2.0"}}`,
		},
		{
			name:  "a user null replaces the class's value",
			class: `{proxy: {enabled: true}}`,
			user:  `{proxy: null}`,
			want:  `{"proxy":null}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			class, user := obj(t, tt.class), obj(t, tt.user)
			classBefore, userBefore := js(t, class), js(t, user)

			got := MergeValues(class, user)
			g.Expect(got).NotTo(BeNil())
			s, err := Marshal(got)
			g.Expect(err).NotTo(HaveOccurred())
			if tt.want == "" {
				g.Expect(s).To(BeEmpty())
			} else {
				g.Expect(s).To(MatchJSON(tt.want))
			}

			scribble(got)
			g.Expect(js(t, class)).To(Equal(classBefore), "class modified")
			g.Expect(js(t, user)).To(Equal(userBefore), "user modified")
		})
	}
}

func TestDeepMerge(t *testing.T) {
	tests := []struct {
		name          string
		base, overlay string
		want          string
	}{
		{name: "nil and nil", want: `{}`},
		{name: "maps merge key by key", base: `{a: {x: 1, w: 2}}`, overlay: `{a: {w: 3, z: 4}}`, want: `{"a":{"x":1,"w":3,"z":4}}`},
		{name: "a list replaces a list", base: `{a: [1, 2]}`, overlay: `{a: [3]}`, want: `{"a":[3]}`},
		{name: "a scalar replaces a map", base: `{a: {x: 1}}`, overlay: `{a: 1}`, want: `{"a":1}`},
		{name: "a map replaces a scalar", base: `{a: 1}`, overlay: `{a: {x: 1}}`, want: `{"a":{"x":1}}`},
		{name: "null replaces", base: `{a: {x: 1}}`, overlay: `{a: {x: null}}`, want: `{"a":{"x":null}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			base, overlay := obj(t, tt.base), obj(t, tt.overlay)
			baseBefore, overlayBefore := js(t, base), js(t, overlay)
			got := DeepMerge(base, overlay)
			g.Expect(js(t, got)).To(MatchJSON(tt.want))
			scribble(got)
			g.Expect(js(t, base)).To(Equal(baseBefore))
			g.Expect(js(t, overlay)).To(Equal(overlayBefore))
		})
	}
}

func TestMergeFrom(t *testing.T) {
	tests := []struct {
		name       string
		values     string
		content    string
		targetPath string
		want       string
		wantErr    string
	}{
		{
			name:    "a document is deep-merged and wins",
			values:  `{auth: {user: admin, password: old}, image: {tag: "1"}}`,
			content: "auth:\n  password: s3cret\n",
			want:    `{"auth":{"user":"admin","password":"s3cret"},"image":{"tag":"1"}}`,
		},
		{name: "a JSON document", values: `{a: 1}`, content: `{"b": {"c": true}}`, want: `{"a":1,"b":{"c":true}}`},
		{name: "empty content changes nothing", values: `{a: 1}`, want: `{"a":1}`},
		{name: "into nil values", content: `a: 1`, want: `{"a":1}`},
		{
			name:    "content that is no map is an error that does not quote it",
			values:  `{a: 1}`,
			content: "just-a-s3cret-string",
			wantErr: "not a YAML map",
		},
		{
			name:       "unquoted raw content is typed like helm --set",
			values:     `{auth: {user: admin}}`,
			content:    "true",
			targetPath: "auth.enabled",
			want:       `{"auth":{"user":"admin","enabled":true}}`,
		},
		{name: "an integer", content: "42", targetPath: "a.b", want: `{"a":{"b":42}}`},
		{name: "a string", content: "s3cret", targetPath: "auth.password", want: `{"auth":{"password":"s3cret"}}`},
		{name: "quotes force a string", content: `"42"`, targetPath: "a", want: `{"a":"42"}`},
		{name: "single quotes force a string", content: `'true'`, targetPath: "a", want: `{"a":"true"}`},
		{
			name:       "the raw value replaces a map at the target path",
			values:     `{a: {b: {c: 1}}}`,
			content:    "x",
			targetPath: "a.b",
			want:       `{"a":{"b":"x"}}`,
		},
		{name: "escaped dots in the target path", content: "1", targetPath: `nodeSelector.kubernetes\.io/os`, want: `{"nodeSelector":{"kubernetes.io/os":1}}`},
		{name: "a list index in the target path", content: "x", targetPath: `list[1]`, want: `{"list":[null,"x"]}`},
		{
			name:       "a target path outside Flux's syntax is an error naming it",
			content:    "x",
			targetPath: `a["b"]`,
			wantErr:    `targetPath "a[\"b\"]"`,
		},
		{
			name:       "content strvals cannot set is an error that does not quote it",
			content:    "s3cret,oops",
			targetPath: "a",
			wantErr:    `targetPath "a"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			values := obj(t, tt.values)
			before := js(t, values)
			got, err := MergeFrom(values, []byte(tt.content), tt.targetPath)
			g.Expect(js(t, values)).To(Equal(before), "values modified")
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				g.Expect(err.Error()).NotTo(ContainSubstring("s3cret"))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(js(t, got)).To(MatchJSON(tt.want))
			scribble(got)
			g.Expect(js(t, values)).To(Equal(before), "values share maps with the result")
		})
	}
}

func TestEquivalent(t *testing.T) {
	g := NewWithT(t)
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{`{"a":1,"b":{"c":"x"}}`, `{"b":{"c":"x"},"a":1}`, true},
		{`{"a":1}`, "a: 1\n", true},
		{`{"a":1}`, `{"a":1.0}`, true},
		{"", "{}", true},
		{"null", "", true},
		{`{"a":1}`, `{"a":2}`, false},
		{`{"a":"1"}`, `{"a":1}`, false},
		{`{"a":[1,2]}`, `{"a":[2,1]}`, false},
		{`{"a":`, `{"a":`, true},
		{`{"a":`, `{"a":1}`, false},
	} {
		g.Expect(Equivalent(c.a, c.b)).To(Equal(c.want), "%q vs %q", c.a, c.b)
	}
}
