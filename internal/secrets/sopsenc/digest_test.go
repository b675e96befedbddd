package sopsenc

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestDigest(t *testing.T) {
	g := NewWithT(t)
	id, rec := newKey(t)
	_, rec2 := newKey(t)
	base := manifest("ns", "s", map[string][]byte{"k": []byte("v1")}, map[string]string{"t": "x"})
	digest := func(m []byte, recs []string, salt []byte) string {
		d, err := Digest(m, recs, salt)
		g.Expect(err).NotTo(HaveOccurred())
		return d
	}
	d := digest(base, []string{rec}, testSalt)
	g.Expect(d).To(MatchRegexp(`^hmac-sha256:[0-9a-f]{64}$`))
	g.Expect(digest(base, []string{rec}, testSalt)).To(Equal(d), "stable across calls")

	// Same content, other formatting, key order and comments: same digest.
	reordered := []byte(`# rendered by apiary
kind: Secret
stringData: {t: x}
metadata:
  labels:
    app.kubernetes.io/name: colony-a
  namespace: ns
  name: s
data:
  k: djE=
type: Opaque
apiVersion: v1
`)
	g.Expect(digest(reordered, []string{rec}, testSalt)).To(Equal(d))
	// Recipients are a set.
	both := digest(base, []string{rec, rec2}, testSalt)
	g.Expect(digest(base, []string{rec2, rec, rec2}, testSalt)).To(Equal(both))

	// Any change to values, metadata, recipients or salt changes it.
	otherSalt := append([]byte{}, testSalt...)
	otherSalt[0] ^= 1
	for name, other := range map[string]string{
		"data value":       digest(manifest("ns", "s", map[string][]byte{"k": []byte("v2")}, map[string]string{"t": "x"}), []string{rec}, testSalt),
		"stringData value": digest(manifest("ns", "s", map[string][]byte{"k": []byte("v1")}, map[string]string{"t": "y"}), []string{rec}, testSalt),
		"name":             digest(manifest("ns", "s2", map[string][]byte{"k": []byte("v1")}, map[string]string{"t": "x"}), []string{rec}, testSalt),
		"added recipient":  both,
		"other recipient":  digest(base, []string{rec2}, testSalt),
		"salt":             digest(base, []string{rec}, otherSalt),
	} {
		g.Expect(other).NotTo(Equal(d), name)
	}

	// The decrypted document (which carries the annotation) digests like its source.
	enc, err := Encrypt(base, []string{rec}, testSalt)
	g.Expect(err).NotTo(HaveOccurred())
	plain, err := Decrypt(enc, id)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(plain)).To(ContainSubstring(DigestAnnotation))
	g.Expect(digest(plain, []string{rec}, testSalt)).To(Equal(d))
	g.Expect(DigestOf(enc)).To(Equal(d))

	// Only SOPS documents carry a digest.
	g.Expect(DigestOf(plain)).To(BeEmpty())
	g.Expect(DigestOf([]byte("{not yaml"))).To(BeEmpty())
	g.Expect(DigestOf(nil)).To(BeEmpty())
}

func TestEncryptIfChanged(t *testing.T) {
	g := NewWithT(t)
	id, rec := newKey(t)
	_, rec2 := newKey(t)
	v1 := manifest("ns", "s", map[string][]byte{"k": []byte("v1")}, nil)

	first, changed, err := EncryptIfChanged(nil, v1, []string{rec}, testSalt)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeTrue())

	again, changed, err := EncryptIfChanged(first, v1, []string{rec}, testSalt)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeFalse())
	g.Expect(again).To(Equal(first), "unchanged plaintext keeps the committed ciphertext")

	v2 := manifest("ns", "s", map[string][]byte{"k": []byte("v2")}, nil)
	second, changed, err := EncryptIfChanged(first, v2, []string{rec}, testSalt)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeTrue())
	plain, err := Decrypt(second, id)
	g.Expect(err).NotTo(HaveOccurred())
	data, _ := values(t, plain)
	g.Expect(data).To(HaveKeyWithValue("k", "djI="))

	_, changed, err = EncryptIfChanged(second, v2, []string{rec, rec2}, testSalt)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeTrue(), "a new recipient needs a new ciphertext")

	_, changed, err = EncryptIfChanged(v2, v2, []string{rec}, testSalt)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(changed).To(BeTrue(), "a plaintext previous document is replaced")
}
