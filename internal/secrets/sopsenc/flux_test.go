package sopsenc

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/getsops/sops/v3/cmd/sops/formats"
	"github.com/getsops/sops/v3/decrypt"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// useAgeKeyEnv points sops' own key lookup at ids only, as
// kustomize-controller's key service is given the identities of its age key
// Secret.
func useAgeKeyEnv(t *testing.T, ids ...string) {
	t.Setenv("SOPS_AGE_KEY", strings.Join(ids, "\n"))
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
}

func TestSopsDecryptsOutput(t *testing.T) {
	g := NewWithT(t)
	id, rec := newKey(t)
	id2, rec2 := newKey(t)
	in := manifest("team-a", "creds", map[string][]byte{"password": []byte("pw-123456789")}, map[string]string{"token": "tok-abcdefgh"})
	out, err := Encrypt(in, []string{rec, rec2}, testSalt)
	g.Expect(err).NotTo(HaveOccurred())
	wantData, wantStringData := values(t, in)

	for _, key := range []string{id, id2} {
		useAgeKeyEnv(t, key)
		plain, err := decrypt.DataWithFormat(out, formats.Yaml) // verifies the MAC
		g.Expect(err).NotTo(HaveOccurred())
		data, stringData := values(t, plain)
		g.Expect(data).To(Equal(wantData))
		g.Expect(stringData).To(Equal(wantStringData))
	}
}

// TestKustomizeControllerDecryptionPath follows what kustomize-controller
// v1.9.6 does with a committed file: kustomize build, recognise the resource
// by its sops.mac field, marshal it to JSON and decrypt that with SOPS' JSON
// store. The MAC is checked too (the controller skips it by default), which
// holds because Encrypt sorts keys as the JSON marshalling does.
func TestKustomizeControllerDecryptionPath(t *testing.T) {
	g := NewWithT(t)
	id, rec := newKey(t)
	in := manifest("team-a", "creds", map[string][]byte{"ca.crt": []byte("cert-body-0123456789"), "empty": {}}, map[string]string{"token": "tok-abcdefgh"})
	out, err := Encrypt(in, []string{rec}, testSalt)
	g.Expect(err).NotTo(HaveOccurred())

	dir := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(dir, "secret.yaml"), out, 0o644)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(dir, "kustomization.yaml"),
		[]byte("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- secret.yaml\n"), 0o644)).To(Succeed())
	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resources.Resources()).To(HaveLen(1))
	res := resources.Resources()[0]

	// isSOPSEncryptedResource: a non-empty sops.mac field.
	sopsField := res.Field("sops")
	g.Expect(sopsField.IsNilOrEmpty()).To(BeFalse())
	g.Expect(sopsField.Value.Field("mac").IsNilOrEmpty()).To(BeFalse())

	js, err := res.MarshalJSON()
	g.Expect(err).NotTo(HaveOccurred())
	useAgeKeyEnv(t, id)
	plain, err := decrypt.DataWithFormat(js, formats.Json)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.UnmarshalJSON(plain)).To(Succeed())

	var got map[string]any
	g.Expect(json.Unmarshal(plain, &got)).To(Succeed())
	wantData, wantStringData := values(t, in)
	g.Expect(got["data"]).To(Equal(wantData))
	g.Expect(got["stringData"]).To(Equal(wantStringData))
	g.Expect(got).NotTo(HaveKey("sops"))
	g.Expect(res.GetName()).To(Equal("creds"))
}
