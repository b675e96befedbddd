package values

import (
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// field builds a user-facing field.
func field(path string, typ workspacesv1.UserFacingConfigType, required bool, def string) workspacesv1.UserFacingConfigField {
	f := workspacesv1.UserFacingConfigField{HelmValuePath: path, DisplayName: path, Type: typ, Required: required}
	if def != "" {
		f.Default = &apiextensionsv1.JSON{Raw: []byte(def)}
	}
	return f
}

const (
	typeString = workspacesv1.UserFacingConfigString
	typeSecret = workspacesv1.UserFacingConfigSecret
	typeKey    = workspacesv1.UserFacingConfigPublicKey
)

func TestSplitSecrets(t *testing.T) {
	tests := []struct {
		name       string
		values     string
		fields     []workspacesv1.UserFacingConfigField
		wantPublic string
		wantSecret string
	}{
		{
			name:       "no fields",
			values:     `{a: 1}`,
			wantPublic: `{"a":1}`,
			wantSecret: `{}`,
		},
		{
			name:       "nil values",
			fields:     []workspacesv1.UserFacingConfigField{field("a.b", typeSecret, true, "")},
			wantPublic: `{}`,
			wantSecret: `{}`,
		},
		{
			name:   "nested secret values move, other types stay",
			values: `{jupyterhub: {hub: {password: pw, user: admin}, proxy: {secretToken: tok}}, ssh: {publicKey: "ssh-ed25519 AAA"}}`,
			fields: []workspacesv1.UserFacingConfigField{
				field("jupyterhub.hub.password", typeSecret, true, ""),
				field("jupyterhub.hub.user", typeString, false, ""),
				field("jupyterhub.proxy.secretToken", typeSecret, false, ""),
				field("ssh.publicKey", typeKey, false, ""),
			},
			wantPublic: `{"jupyterhub":{"hub":{"user":"admin"}},"ssh":{"publicKey":"ssh-ed25519 AAA"}}`,
			wantSecret: `{"jupyterhub":{"hub":{"password":"pw"},"proxy":{"secretToken":"tok"}}}`,
		},
		{
			name:       "missing secret values are skipped",
			values:     `{auth: {user: admin}, token: "x"}`,
			fields:     []workspacesv1.UserFacingConfigField{field("auth.password", typeSecret, true, ""), field("token.value", typeSecret, false, "")},
			wantPublic: `{"auth":{"user":"admin"},"token":"x"}`,
			wantSecret: `{}`,
		},
		{
			name:       "a secret map moves whole, and a secret inside it comes along",
			values:     `{auth: {user: admin, password: pw}, other: 1}`,
			fields:     []workspacesv1.UserFacingConfigField{field("auth.password", typeSecret, false, ""), field("auth", typeSecret, false, "")},
			wantPublic: `{"other":1}`,
			wantSecret: `{"auth":{"user":"admin","password":"pw"}}`,
		},
		{
			name:       "bracket paths; a null value is moved too",
			values:     `{env: {"API.KEY": k, "EMPTY": null, "keep": 1}}`,
			fields:     []workspacesv1.UserFacingConfigField{field(`env["API.KEY"]`, typeSecret, false, ""), field("env.EMPTY", typeSecret, false, "")},
			wantPublic: `{"env":{"keep":1}}`,
			wantSecret: `{"env":{"API.KEY":"k","EMPTY":null}}`,
		},
		{
			name:       "empty maps that were there before stay",
			values:     `{a: {}, b: {c: {d: s}}}`,
			fields:     []workspacesv1.UserFacingConfigField{field("b.c.d", typeSecret, false, "")},
			wantPublic: `{"a":{}}`,
			wantSecret: `{"b":{"c":{"d":"s"}}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			values := obj(t, tt.values)
			before := js(t, values)

			public, secret, err := SplitSecrets(values, tt.fields)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(js(t, public)).To(MatchJSON(tt.wantPublic))
			g.Expect(js(t, secret)).To(MatchJSON(tt.wantSecret))

			scribble(public)
			scribble(secret)
			g.Expect(js(t, values)).To(Equal(before), "values modified or shared")
		})
	}

	t.Run("a path that does not parse is an error naming it, not the value", func(t *testing.T) {
		g := NewWithT(t)
		_, _, err := SplitSecrets(obj(t, `{a: {b: s3cret}}`), []workspacesv1.UserFacingConfigField{field("a..b", typeSecret, false, "")})
		g.Expect(err).To(MatchError(ContainSubstring(`path "a..b": empty segment`)))
		g.Expect(err.Error()).NotTo(ContainSubstring("s3cret"))
	})
}

func TestCheckRequired(t *testing.T) {
	fields := []workspacesv1.UserFacingConfigField{
		field("auth.password", typeSecret, true, ""),
		field("auth.user", typeString, true, ""),
		field("hostname", typeString, true, `"jupyter"`),
		field("storageClass", typeString, true, `null`),
		field("optional", typeString, false, ""),
		field("broken..path", typeString, true, ""),
	}
	tests := []struct {
		name           string
		values, secret string
		want           []string
	}{
		{name: "nothing supplied", want: []string{"auth.password", "auth.user", "broken..path", "storageClass"}},
		{
			name:   "values in either tree count",
			values: `{auth: {user: admin}, storageClass: fast}`,
			secret: `{auth: {password: pw}}`,
			want:   []string{"broken..path"},
		},
		{
			name:   "null counts as missing",
			values: `{auth: {user: null, password: pw}}`,
			want:   []string{"auth.user", "broken..path", "storageClass"},
		},
		{
			name:   "a value behind a scalar is missing",
			values: `{auth: "admin:pw"}`,
			want:   []string{"auth.password", "auth.user", "broken..path", "storageClass"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			values, secret := obj(t, tt.values), obj(t, tt.secret)
			g.Expect(CheckRequired(values, secret, fields)).To(Equal(tt.want))
		})
	}
	NewWithT(t).Expect(CheckRequired(nil, nil, nil)).To(BeEmpty())
}

func TestValidateFields(t *testing.T) {
	g := NewWithT(t)
	g.Expect(ValidateFields(nil)).To(Succeed())
	g.Expect(ValidateFields([]workspacesv1.UserFacingConfigField{
		field("a.b", typeString, false, ""), field(`env["X.Y"]`, typeSecret, false, ""),
	})).To(Succeed())
	g.Expect(ValidateFields([]workspacesv1.UserFacingConfigField{
		field("a.b", typeString, false, ""), field("a.", typeString, false, ""),
	})).To(MatchError(`userFacingConfig helmValuePath: path "a.": trailing dot at position 2`))
}
