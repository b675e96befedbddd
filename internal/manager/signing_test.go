package manager

import (
	"bytes"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	. "github.com/onsi/gomega"
)

func armoredPrivate(t *testing.T, passphrase []byte) []byte {
	t.Helper()
	g := NewWithT(t)
	e, err := openpgp.NewEntity("Apiary", "", "apiary@example.com", nil)
	g.Expect(err).NotTo(HaveOccurred())
	if passphrase != nil {
		g.Expect(e.EncryptPrivateKeys(passphrase, nil)).To(Succeed())
	}
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PrivateKeyType, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(e.SerializePrivateWithoutSigning(w, nil)).To(Succeed())
	g.Expect(w.Close()).To(Succeed())
	return buf.Bytes()
}

func TestParseSigningKey(t *testing.T) {
	plain := armoredPrivate(t, nil)
	locked := armoredPrivate(t, []byte("open sesame"))
	tests := []struct {
		name       string
		key, pass  []byte
		wantErr    string
		wantSigner bool
	}{
		{name: "plain key", key: plain, wantSigner: true},
		{name: "encrypted key with passphrase", key: locked, pass: []byte("open sesame"), wantSigner: true},
		{name: "encrypted key without passphrase", key: locked, wantErr: "no \"passphrase\""},
		{name: "wrong passphrase", key: locked, pass: []byte("nope"), wantErr: "does not decrypt"},
		{name: "no key", wantErr: "no \"git.asc\""},
		{name: "not a key", key: []byte("hello"), wantErr: "reading \"git.asc\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			e, err := parseSigningKey(tt.key, tt.pass)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				if len(tt.pass) > 0 {
					g.Expect(err.Error()).NotTo(ContainSubstring(string(tt.pass)), "no passphrase in errors")
				}
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(e.PrivateKey.Encrypted).To(BeFalse())
		})
	}
}
