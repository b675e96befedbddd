package sopsenc

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"filippo.io/age"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

func TestEncryptDecryptRoundTrip(t *testing.T) {
	binary := []byte{0x00, 0xff, 0x10, 0x80, 'b', 'i', 'n', 0x00, 0xfe, 0x7f, 0x01, 0x02, 0xc3, 0x28, 0x9a, 0x00}
	for _, tc := range []struct {
		name       string
		data       map[string][]byte
		stringData map[string]string
	}{
		{name: "data", data: map[string][]byte{"username": []byte("admin-user-7f3a"), "password": []byte("s3cr3t-p4ssw0rd-9c1e")}},
		{name: "stringData", stringData: map[string]string{"config.yaml": "token: tok-abcdef123456\nurl: https://example.com\n"}},
		{name: "data and stringData", data: map[string][]byte{"ca.crt": []byte("-----BEGIN CERT-----\nMIIBcert-body\n")}, stringData: map[string]string{"api-token": "tok-0123456789abcdef"}},
		{name: "binary data", data: map[string][]byte{"blob.bin": binary}},
		{name: "empty value", data: map[string][]byte{"empty": {}}, stringData: map[string]string{"blank": ""}},
		{name: "empty maps", data: map[string][]byte{}, stringData: map[string]string{}},
		{name: "no data at all"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			id, rec := newKey(t)
			in := manifest("team-a", "creds", tc.data, tc.stringData)

			out, err := Encrypt(in, []string{rec}, testSalt)
			g.Expect(err).NotTo(HaveOccurred())

			// Metadata stays readable; the SOPS metadata is what Flux looks for.
			doc := parsed(t, out)
			g.Expect(doc["apiVersion"]).To(Equal("v1"))
			g.Expect(doc["kind"]).To(Equal("Secret"))
			g.Expect(doc["type"]).To(Equal("Opaque"))
			g.Expect(field(doc, "metadata", "name")).To(Equal("creds"))
			g.Expect(field(doc, "metadata", "namespace")).To(Equal("team-a"))
			g.Expect(field(doc, "metadata", "labels", "app.kubernetes.io/name")).To(Equal("colony-a"))
			g.Expect(field(doc, "metadata", "annotations", DigestAnnotation)).To(HavePrefix("hmac-sha256:"))
			g.Expect(field(doc, "sops", "mac")).To(HavePrefix("ENC[AES256_GCM,"))
			g.Expect(field(doc, "sops", "encrypted_regex")).To(Equal(EncryptedRegex))
			g.Expect(field(doc, "sops", "age")).To(ConsistOf(HaveKeyWithValue("recipient", rec)))
			g.Expect(string(out)).To(ContainSubstring("mac: ENC["), "kustomize-controller's YAML marker")

			// Every value is encrypted, none appears in plaintext or base64.
			data, stringData := values(t, out)
			g.Expect(data).To(HaveLen(len(tc.data)))
			g.Expect(stringData).To(HaveLen(len(tc.stringData)))
			// As with the sops CLI, an empty value stays empty.
			for k, v := range data {
				if len(tc.data[k]) > 0 {
					g.Expect(v).To(HavePrefix("ENC[AES256_GCM,"), "data %s", k)
				} else {
					g.Expect(v).To(BeEmpty())
				}
			}
			for k, v := range stringData {
				if tc.stringData[k] != "" {
					g.Expect(v).To(HavePrefix("ENC[AES256_GCM,"), "stringData %s", k)
				} else {
					g.Expect(v).To(BeEmpty())
				}
			}
			for _, v := range tc.data {
				if len(v) >= 8 {
					g.Expect(string(out)).NotTo(ContainSubstring(string(v)))
					g.Expect(string(out)).NotTo(ContainSubstring(base64.StdEncoding.EncodeToString(v)))
				}
			}
			for _, v := range tc.stringData {
				for _, line := range strings.Split(v, "\n") {
					if len(line) >= 8 {
						g.Expect(string(out)).NotTo(ContainSubstring(line))
					}
				}
			}

			// Decrypt gives back the same values.
			plain, err := Decrypt(out, id)
			g.Expect(err).NotTo(HaveOccurred())
			wantData, wantStringData := values(t, in)
			gotData, gotStringData := values(t, plain)
			g.Expect(emptyToNil(gotData)).To(Equal(emptyToNil(wantData)))
			g.Expect(emptyToNil(gotStringData)).To(Equal(emptyToNil(wantStringData)))
			g.Expect(field(parsed(t, plain), "metadata", "name")).To(Equal("creds"))
			g.Expect(parsed(t, plain)).NotTo(HaveKey("sops"))
		})
	}
}

func TestEncryptIsRandomizedButDigestStable(t *testing.T) {
	g := NewWithT(t)
	_, rec := newKey(t)
	in := manifest("ns", "s", map[string][]byte{"k": []byte("value-1234567")}, nil)
	a, err := Encrypt(in, []string{rec}, testSalt)
	g.Expect(err).NotTo(HaveOccurred())
	b, err := Encrypt(in, []string{rec}, testSalt)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(a).NotTo(Equal(b), "SOPS output is randomized")
	want, err := Digest(in, []string{rec}, testSalt)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(DigestOf(a)).To(Equal(want))
	g.Expect(DigestOf(b)).To(Equal(want))
}

// tamper edits a field of the parsed encrypted document and re-renders it.
func tamper(t *testing.T, doc []byte, edit func(m map[string]any)) []byte {
	t.Helper()
	m := parsed(t, doc)
	edit(m)
	out, err := yaml.Marshal(m)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return out
}

func TestDecryptDetectsTampering(t *testing.T) {
	id, rec := newKey(t)
	in := manifest("ns", "db", map[string][]byte{"password": []byte("pw-aaaaaaaaaaaa"), "user": []byte("user-bbbbbbbbbb")}, map[string]string{"token": "tok-cccccccccccc"})
	out, err := Encrypt(in, []string{rec}, testSalt)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	_, otherRec := newKey(t)
	other, err := Encrypt(in, []string{otherRec}, testSalt)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())

	for _, tc := range []struct {
		name string
		edit func(m map[string]any)
	}{
		{"renamed (MAC covers metadata)", func(m map[string]any) { field(m, "metadata").(map[string]any)["name"] = "other" }},
		{"digest annotation changed", func(m map[string]any) {
			field(m, "metadata", "annotations").(map[string]any)[DigestAnnotation] = "hmac-sha256:00"
		}},
		{"label added", func(m map[string]any) {
			field(m, "metadata", "labels").(map[string]any)["x"] = "y"
		}},
		{"values swapped between keys", func(m map[string]any) {
			d := m["data"].(map[string]any)
			d["password"], d["user"] = d["user"], d["password"]
		}},
		{"value removed", func(m map[string]any) { delete(m["data"].(map[string]any), "user") }},
		{"plaintext value injected", func(m map[string]any) { m["data"].(map[string]any)["password"] = "hunter2-injected" }},
		{"value from another document", func(m map[string]any) {
			m["data"].(map[string]any)["password"] = field(parsed(t, other), "data", "password")
		}},
		{"mac replaced", func(m map[string]any) { m["sops"].(map[string]any)["mac"] = field(parsed(t, other), "sops", "mac") }},
		{"mac emptied", func(m map[string]any) { m["sops"].(map[string]any)["mac"] = "" }},
		{"lastmodified changed", func(m map[string]any) { m["sops"].(map[string]any)["lastmodified"] = "2001-01-01T00:00:00Z" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := Decrypt(tamper(t, out, tc.edit), id)
			g.Expect(err).To(HaveOccurred())
			g.Expect(errors.Is(err, ErrIntegrity)).To(BeTrue(), "%v", err)
			g.Expect(err.Error()).NotTo(ContainSubstring("hunter2"))
			g.Expect(err.Error()).NotTo(ContainSubstring("pw-aaaa"))
		})
	}

	// The untouched document, re-rendered the same way, still decrypts.
	_, err = Decrypt(tamper(t, out, func(map[string]any) {}), id)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
}

func TestMultipleRecipientsEachDecrypt(t *testing.T) {
	g := NewWithT(t)
	var ids, recs []string
	for range 3 {
		id, rec := newKey(t)
		ids, recs = append(ids, id), append(recs, rec)
	}
	hybrid, err := age.GenerateHybridIdentity()
	g.Expect(err).NotTo(HaveOccurred())
	ids, recs = append(ids, hybrid.String()), append(recs, hybrid.Recipient().String())

	in := manifest("ns", "shared", map[string][]byte{"k": []byte("shared-value-123")}, nil)
	out, err := Encrypt(in, append(recs, recs[0]), testSalt) // a duplicate is dropped
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(field(parsed(t, out), "sops", "age")).To(HaveLen(4))
	for i, id := range ids {
		plain, err := Decrypt(out, id)
		g.Expect(err).NotTo(HaveOccurred(), "identity %d", i)
		data, _ := values(t, plain)
		g.Expect(data).To(HaveKeyWithValue("k", base64.StdEncoding.EncodeToString([]byte("shared-value-123"))))
	}
	// A key file with comments and an unrelated identity first also works.
	unrelated, _ := newKey(t)
	_, err = Decrypt(out, "# created: today\n"+unrelated+"\n"+ids[2]+"\n")
	g.Expect(err).NotTo(HaveOccurred())

	_, err = Decrypt(out, unrelated)
	g.Expect(err).To(MatchError(ContainSubstring("none of the document's 4 age recipients matches")))
	g.Expect(err.Error()).To(ContainSubstring("Secret ns/shared"))
	g.Expect(err.Error()).NotTo(ContainSubstring(unrelated))

	_, err = Decrypt(out, "AGE-SECRET-KEY-1NOTAKEY")
	g.Expect(err).To(MatchError(ContainSubstring("parsing age identity")))
	g.Expect(err.Error()).NotTo(ContainSubstring("NOTAKEY"))
}

func TestEncryptRejectsBadInput(t *testing.T) {
	_, rec := newKey(t)
	id, _ := newKey(t)
	good := manifest("ns", "s", map[string][]byte{"k": []byte("v-hunter2-value")}, nil)
	for _, tc := range []struct {
		name       string
		manifest   []byte
		recipients []string
		salt       []byte
		want       string
	}{
		{"garbage recipient", good, []string{rec, "age1notarecipient"}, testSalt, `invalid age recipient #2 "age1notarecipient"`},
		{"ssh recipient", good, []string{"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJ"}, testSalt, `invalid age recipient #1 "ssh-ed25519`},
		{"plugin recipient", good, []string{"age1yubikey1qwertyuiop"}, testSalt, `invalid age recipient #1 "age1yubikey1qwertyuiop"`},
		{"identity as recipient", good, []string{id}, testSalt, "age recipient #1 is an age identity (private key)"},
		{"no recipient", good, nil, testSalt, "at least one age recipient"},
		{"short salt", good, []string{rec}, []byte("short"), "salt has 5 bytes"},
		{"not a Secret", []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  k: v\n"), []string{rec}, testSalt, "kind must be Secret"},
		{"wrong apiVersion", []byte("apiVersion: v2\nkind: Secret\nmetadata:\n  name: c\n"), []string{rec}, testSalt, "Secret c: apiVersion must be v1"},
		{"no name", []byte("apiVersion: v1\nkind: Secret\nmetadata: {}\n"), []string{rec}, testSalt, "metadata.name is required"},
		{"two documents", append(append([]byte{}, good...), append([]byte("---\n"), good...)...), []string{rec}, testSalt, "more than one YAML document"},
		{"empty", []byte("# nothing\n"), []string{rec}, testSalt, "empty document"},
		{"data not base64", []byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ndata:\n  k: hunter2!!\n"), []string{rec}, testSalt, `data key "k" is not valid base64`},
		{"value not a string", []byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  k: {hunter2: x}\n"), []string{rec}, testSalt, `stringData key "k" must hold a string`},
		{"invalid key", []byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  'a b': hunter2\n"), []string{rec}, testSalt, `stringData key "a b" is invalid`},
		{"data not a map", []byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ndata: hunter2\n"), []string{rec}, testSalt, "data must be a map"},
		{"malformed YAML", []byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\nstringData:\n  k: \"hunter2\n"), []string{rec}, testSalt, "parsing YAML"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := Encrypt(tc.manifest, tc.recipients, tc.salt)
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
			g.Expect(err.Error()).NotTo(ContainSubstring("hunter2"))
			g.Expect(err.Error()).NotTo(ContainSubstring("AGE-SECRET-KEY"))
			_, err = Digest(tc.manifest, tc.recipients, tc.salt)
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
		})
	}

	// Already encrypted input is refused rather than encrypted twice.
	g := NewWithT(t)
	enc, err := Encrypt(good, []string{rec}, testSalt)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = Encrypt(enc, []string{rec}, testSalt)
	g.Expect(err).To(MatchError(ContainSubstring("Secret ns/s: already holds a top-level sops key")))
}

func TestGenerateAgeKey(t *testing.T) {
	g := NewWithT(t)
	id, rec := newKey(t)
	g.Expect(id).To(HavePrefix("AGE-SECRET-KEY-1"))
	g.Expect(rec).To(HavePrefix("age1"))
	parsedID, err := age.ParseX25519Identity(id)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(parsedID.Recipient().String()).To(Equal(rec))
	id2, _ := newKey(t)
	g.Expect(id2).NotTo(Equal(id))
}
