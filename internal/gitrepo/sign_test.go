package gitrepo

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	. "github.com/onsi/gomega"
)

// TestSyncSignsCommits signs with an OpenPGP key: the pushed commit carries a
// signature that its public key verifies, and another key does not.
func TestSyncSignsCommits(t *testing.T) {
	g := NewWithT(t)
	key, err := openpgp.NewEntity("Apiary", "", "apiary@example.com", nil)
	g.Expect(err).NotTo(HaveOccurred())
	other, err := openpgp.NewEntity("Someone", "", "someone@example.com", nil)
	g.Expect(err).NotTo(HaveOccurred())
	srv := startServer(t, nil)
	r, err := Open(context.Background(), Options{
		URL: srv.HTTPAddress() + "/" + repoName, Branch: branch, Dir: filepath.Join(t.TempDir(), "clone"), Path: "apiary",
		Author: Author{Name: "Apiary", Email: "apiary@example.com"}, SigningKey: key,
	})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = r.Sync(context.Background(), map[string][]byte{"team-a/configmap/a.yaml": configMap("team-a", "a", "1")}, nil, "apiary: signed")
	g.Expect(err).NotTo(HaveOccurred())

	head := remoteHead(t, srv)
	g.Expect(head.PGPSignature).To(ContainSubstring("BEGIN PGP SIGNATURE"))
	_, err = head.Verify(armoredPublic(t, key))
	g.Expect(err).NotTo(HaveOccurred())
	_, err = head.Verify(armoredPublic(t, other))
	g.Expect(err).To(HaveOccurred())
}

func armoredPublic(t *testing.T, e *openpgp.Entity) string {
	t.Helper()
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PublicKeyType, nil)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	NewWithT(t).Expect(e.Serialize(w)).To(Succeed())
	NewWithT(t).Expect(w.Close()).To(Succeed())
	return buf.String()
}
