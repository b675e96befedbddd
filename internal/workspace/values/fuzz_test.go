package values

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

func FuzzParsePath(f *testing.F) {
	for _, seed := range []string{
		"a", "jupyterhub.singleuser.memory.limit", `a.b["nvidia.com/gpu"]`, `x["a.b"].y`, `['it\'s']`,
		`a["q\"\\"]`, "a..b", ".a", "a.", `a[0]`, `a["b`, `a["b"]c`, "", "ä.ö", "a\x00b", `["a"]["b"]`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, p string) {
		segs, err := ParsePath(p)
		if err != nil {
			var pe *PathError
			if !errors.As(err, &pe) {
				t.Fatalf("ParsePath(%q) error %v is not a *PathError", p, err)
			}
			if pe.Pos < 1 || pe.Pos > len(p)+1 {
				t.Fatalf("ParsePath(%q) error position %d out of range", p, pe.Pos)
			}
			return
		}
		if len(segs) == 0 || slices.Contains(segs, "") {
			t.Fatalf("ParsePath(%q) = %q: empty result or segment", p, segs)
		}
		rendered := FormatPath(segs)
		again, err := ParsePath(rendered)
		if err != nil {
			t.Fatalf("ParsePath(%q) = %q, rendered %q does not parse: %v", p, segs, rendered, err)
		}
		if !slices.Equal(again, segs) {
			t.Fatalf("ParsePath(%q) = %q, rendered %q parses to %q", p, segs, rendered, again)
		}
	})
}

// decodeMap decodes a JSON object, reporting false for anything else.
func decodeMap(data []byte) (map[string]any, bool) {
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, false
	}
	return m, true
}

func FuzzMergeValues(f *testing.F) {
	f.Add([]byte(`{"image":{"tag":"1"},"debug":false}`), []byte(`{"debug":true,"image":{"repo":"x"}}`))
	f.Add([]byte(`null`), []byte(`{}`))
	f.Add([]byte(`{"a":[{"b":[1,{"c":null}]}]}`), []byte(`{"a":{"b":"x"},"z":[[]]}`))
	f.Fuzz(func(t *testing.T, classJSON, userJSON []byte) {
		class, ok1 := decodeMap(classJSON)
		user, ok2 := decodeMap(userJSON)
		if !ok1 || !ok2 {
			return
		}
		classRef, _ := decodeMap(classJSON) // independent copies to compare with
		userRef, _ := decodeMap(userJSON)

		got := MergeValues(class, user)
		if got == nil {
			t.Fatal("MergeValues returned nil")
		}
		for k, v := range got {
			want, inUser := userRef[k]
			if !inUser {
				want = classRef[k]
			}
			if !reflect.DeepEqual(v, want) {
				t.Fatalf("key %q: got %v, want %v", k, v, want)
			}
		}
		for k := range classRef {
			if _, ok := got[k]; !ok {
				t.Fatalf("class key %q lost", k)
			}
		}
		for k := range userRef {
			if _, ok := got[k]; !ok {
				t.Fatalf("user key %q lost", k)
			}
		}
		s1, err1 := Marshal(got)
		s2, err2 := Marshal(MergeValues(class, user))
		if err1 != nil || err2 != nil || s1 != s2 {
			t.Fatalf("Marshal not deterministic: %q (%v) vs %q (%v)", s1, err1, s2, err2)
		}

		scribble(got)
		if !reflect.DeepEqual(class, classRef) || !reflect.DeepEqual(user, userRef) {
			t.Fatal("inputs modified or shared with the result")
		}
	})
}

// leaf is a value that is not a non-empty map, with its path.
type leaf struct {
	path  []string
	value any
}

// leaves collects the leaves of a values tree by rendered path.
func leaves(m map[string]any, prefix []string, out map[string]leaf) {
	for k, v := range m {
		p := append(slices.Clone(prefix), k)
		if sub, ok := v.(map[string]any); ok && len(sub) > 0 {
			leaves(sub, p, out)
			continue
		}
		out[FormatPath(p)] = leaf{p, v}
	}
}

func hasPrefix(path, prefix []string) bool {
	return len(path) >= len(prefix) && slices.Equal(path[:len(prefix)], prefix)
}

func FuzzSplitSecrets(f *testing.F) {
	f.Add([]byte(`{"auth":{"user":"u","password":"p"},"x":1}`), "auth.password\nauth.user")
	f.Add([]byte(`{"a":{"b":{"c":1,"d":{}}},"e":[1]}`), "a\na.b.c\n\ne.f")
	f.Add([]byte(`{"env":{"A.B":"s","C":null}}`), `env["A.B"]`+"\nx\nenv.C")
	f.Fuzz(func(t *testing.T, valuesJSON []byte, pathList string) {
		values, ok := decodeMap(valuesJSON)
		if !ok {
			return
		}
		ref, _ := decodeMap(valuesJSON)

		// Lines are fields; every other one is a secret.
		var fields []workspacesv1.UserFacingConfigField
		var secretPaths [][]string
		badSecret := false
		for i, line := range strings.Split(pathList, "\n") {
			typ := workspacesv1.UserFacingConfigString
			if i%2 == 0 {
				typ = workspacesv1.UserFacingConfigSecret
				if segs, err := ParsePath(line); err != nil {
					badSecret = true
				} else {
					secretPaths = append(secretPaths, segs)
				}
			}
			fields = append(fields, workspacesv1.UserFacingConfigField{HelmValuePath: line, Type: typ})
		}

		public, secret, err := SplitSecrets(values, fields)
		if !reflect.DeepEqual(values, ref) {
			t.Fatal("values modified")
		}
		if badSecret {
			if err == nil {
				t.Fatal("a secret path that does not parse gave no error")
			}
			return
		}
		if err != nil {
			t.Fatalf("SplitSecrets: %v", err)
		}

		want := map[string]leaf{}
		leaves(ref, nil, want)
		pub, sec := map[string]leaf{}, map[string]leaf{}
		leaves(public, nil, pub)
		leaves(secret, nil, sec)
		union := map[string]leaf{}
		for k, l := range pub {
			union[k] = l
			for _, sp := range secretPaths {
				if hasPrefix(l.path, sp) {
					t.Fatalf("public leaf %s lies under secret path %s", k, FormatPath(sp))
				}
			}
		}
		for k, l := range sec {
			if _, dup := union[k]; dup {
				t.Fatalf("leaf %s is in both trees", k)
			}
			union[k] = l
			if !slices.ContainsFunc(secretPaths, func(sp []string) bool { return hasPrefix(l.path, sp) }) {
				t.Fatalf("secret leaf %s lies under no secret path", k)
			}
		}
		if !reflect.DeepEqual(union, want) {
			t.Fatalf("leaves differ:\n got %v\nwant %v", union, want)
		}

		scribble(public)
		scribble(secret)
		if !reflect.DeepEqual(values, ref) {
			t.Fatal("values shared with the results")
		}
	})
}
