package seal

import (
	"bytes"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
)

// reversing "encrypts" by reversing the manifest and counts its calls.
type reversing struct{ encrypts int }

func (r *reversing) Encrypt(m []byte) ([]byte, error) {
	r.encrypts++
	if bytes.Contains(m, []byte("fail")) {
		return nil, errors.New("no key")
	}
	return reverse(m), nil
}

func (r *reversing) Unchanged(committed, m []byte) bool { return bytes.Equal(reverse(committed), m) }

func reverse(b []byte) []byte {
	out := make([]byte, len(b))
	for i := range b {
		out[len(b)-1-i] = b[i]
	}
	return out
}

func TestSeal(t *testing.T) {
	manifest := []byte("kind: Secret")
	committed := reverse(manifest)
	for _, tc := range []struct {
		name                   string
		manifest, cur, holds   []byte
		want                   []byte
		encrypts               int
		noRecipients, anyError bool
		nilEncrypter           bool
	}{
		{name: "new Secret is encrypted", manifest: manifest, want: committed, encrypts: 1},
		{name: "unchanged Secret keeps its committed bytes", manifest: manifest, cur: committed, want: committed},
		{name: "content already found to hold it is not compared again", manifest: manifest, cur: []byte("opaque"), holds: []byte("opaque"), want: []byte("opaque")},
		{name: "changed Secret is encrypted anew", manifest: []byte("kind: Secret2"), cur: committed, want: reverse([]byte("kind: Secret2")), encrypts: 1},
		{name: "no encrypter refuses", manifest: manifest, nilEncrypter: true, noRecipients: true, anyError: true},
		{name: "encryption error is wrapped", manifest: []byte("fail"), encrypts: 1, anyError: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			r := &reversing{}
			var enc Encrypter = r
			if tc.nilEncrypter {
				enc = nil
			}
			got, err := Seal(enc, tc.manifest, tc.cur, tc.holds)
			g.Expect(IsNoRecipients(err)).To(Equal(tc.noRecipients))
			g.Expect(err != nil).To(Equal(tc.anyError), "error: %v", err)
			g.Expect(r.encrypts).To(Equal(tc.encrypts))
			if !tc.anyError {
				g.Expect(got).To(Equal(tc.want))
			}
		})
	}
}
