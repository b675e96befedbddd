package sopsenc

import (
	"testing"

	"github.com/getsops/sops/v3"
	"github.com/getsops/sops/v3/config"
	sopsyaml "github.com/getsops/sops/v3/stores/yaml"
	. "github.com/onsi/gomega"
)

// sopsStore is SOPS' own YAML store as the sops CLI sets it up, which
// yamlStore replaces in the manager (the test binary may link config).
func sopsStore() *sopsyaml.Store { return sopsyaml.NewStore(&config.NewStoresConfig().YAML) }

// storeInputs are documents both stores must read alike: Apiary's
// canonical Secrets and what the sops CLI or a person may have written.
var storeInputs = map[string]string{
	"canonical": string(manifest("team-a", "creds", map[string][]byte{"password": []byte("pw\x00\xff")},
		map[string]string{"token": "line1\nline2: x\n", "quote": `'"#{}[]&*!|>%@`})),
	"types": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\n  annotations: {a: '1'}\n" +
		"stringData:\n  int: 1\n  float: 1.5\n  bool: true\n  null: ~\n  str: \"007\"\n  date: 2026-01-02\n",
	"sequences and nesting": "a:\n  - 1\n  - [x, y]\n  - {k: v}\nb: []\nc: {}\nd:\n  e:\n    f: g\n",
	"anchors":               "base: &b {x: 1}\nuse: *b\nlist: [&s str, *s]\n",
	"comments dropped":      "# head\na: 1 # inline\n# foot\nb:\n  # inner\n  c: 2\n",
	"two documents":         "a: 1\n---\nb: 2\n",
	"empty":                 "",
	"null document":         "~\n",
	"flow and block styles": "s: |\n  block\n  text\nf: >\n  folded\n  text\nq: 'single'\n",
}

func TestYAMLStoreReadsAndWritesAsSops(t *testing.T) {
	for name, in := range storeInputs {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			want, wantErr := sopsStore().LoadPlainFile([]byte(in))
			got, err := yamlStore{}.LoadPlainFile([]byte(in))
			g.Expect(err != nil).To(Equal(wantErr != nil), "errors: %v, SOPS: %v", err, wantErr)
			g.Expect(got).To(Equal(withoutComments(want)))

			wantOut, err := sopsStore().EmitPlainFile(want)
			g.Expect(err).NotTo(HaveOccurred())
			gotOut, err := yamlStore{}.EmitPlainFile(got)
			g.Expect(err).NotTo(HaveOccurred())
			if name != "comments dropped" {
				g.Expect(string(gotOut)).To(Equal(string(wantOut)))
			}
		})
	}
	for _, bad := range []string{"- a\n- b\n", "just a string\n", "a: [\n"} {
		_, wantErr := sopsStore().LoadPlainFile([]byte(bad))
		_, err := yamlStore{}.LoadPlainFile([]byte(bad))
		if (err == nil) != (wantErr == nil) {
			t.Errorf("%q: error %v, SOPS' store %v", bad, err, wantErr)
		}
	}
}

// TestEncryptedDocumentsAsSops: what Encrypt writes is what SOPS' store
// writes for the same tree, and both read it back to the same tree.
func TestEncryptedDocumentsAsSops(t *testing.T) {
	g := NewWithT(t)
	_, rec := newKey(t)
	_, rec2 := newKey(t)
	out, err := Encrypt([]byte(storeInputs["canonical"]), []string{rec, rec2}, testSalt)
	g.Expect(err).NotTo(HaveOccurred())

	want, err := sopsStore().LoadEncryptedFile(out)
	g.Expect(err).NotTo(HaveOccurred())
	got, err := yamlStore{}.LoadEncryptedFile(out)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Branches).To(Equal(want.Branches))
	g.Expect(got.Metadata.MessageAuthenticationCode).To(Equal(want.Metadata.MessageAuthenticationCode))
	g.Expect(got.Metadata.KeyGroups).To(HaveLen(1))
	g.Expect(got.Metadata.KeyGroups[0]).To(HaveLen(2))

	wantOut, err := sopsStore().EmitEncryptedFile(want)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(out)).To(Equal(string(wantOut)))
}

// withoutComments drops the comment items SOPS' store keeps.
func withoutComments(branches sops.TreeBranches) sops.TreeBranches {
	if branches == nil {
		return nil
	}
	out := sops.TreeBranches{}
	for _, b := range branches {
		out = append(out, stripBranch(b))
	}
	return out
}

func stripBranch(b sops.TreeBranch) sops.TreeBranch {
	out := sops.TreeBranch{}
	for _, item := range b {
		if _, ok := item.Key.(sops.Comment); ok {
			continue
		}
		item.Value = stripValue(item.Value)
		out = append(out, item)
	}
	return out
}

func stripValue(v any) any {
	switch v := v.(type) {
	case sops.TreeBranch:
		return stripBranch(v)
	case []any:
		var out []any
		for _, x := range v {
			if _, ok := x.(sops.Comment); !ok {
				out = append(out, stripValue(x))
			}
		}
		return out
	}
	return v
}
