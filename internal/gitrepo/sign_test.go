package gitrepo

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/transport"
	. "github.com/onsi/gomega"

	"github.com/apiaryhq/apiary/internal/gitauth"
	"github.com/apiaryhq/apiary/internal/testenv"
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

// TestSyncSignsCommitsWithSSH signs with an SSH key (Git's gpg.format=ssh):
// `git verify-commit` accepts the pushed commit with the key in its allowed
// signers file, and refuses it with another key there.
func TestSyncSignsCommitsWithSSH(t *testing.T) {
	if _, err := exec.LookPath("ssh-keygen"); err != nil {
		t.Skip("ssh-keygen is not installed")
	}
	g := NewWithT(t)
	private, public := sshKeyPair(t)
	_, otherPublic := sshKeyPair(t)
	signer, err := gitauth.SSHSigner(private, nil)
	g.Expect(err).NotTo(HaveOccurred())
	srv := startServer(t, nil)
	r, err := Open(context.Background(), Options{
		URL: srv.HTTPAddress() + "/" + repoName, Branch: branch, Dir: filepath.Join(t.TempDir(), "clone"), Path: "apiary",
		Author: Author{Name: "Apiary", Email: "apiary@example.com"}, Signer: signer,
	})
	g.Expect(err).NotTo(HaveOccurred())
	res, err := r.Sync(context.Background(), map[string][]byte{"team-a/configmap/a.yaml": configMap("team-a", "a", "1")}, nil, "apiary: signed")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(remoteHead(t, srv).PGPSignature).To(HavePrefix("-----BEGIN SSH SIGNATURE-----"))

	bare := filepath.Join(srv.Root(), repoName)
	g.Expect(testenv.VerifySSHCommit(bare, res.Commit, "apiary@example.com", public)).To(Succeed())
	g.Expect(testenv.VerifySSHCommit(bare, res.Commit, "apiary@example.com", otherPublic)).NotTo(Succeed())
}

// TestSyncStopsOnABrokenSigningKey commits nothing while the signer cannot
// be had, with ErrSigningKey, and commits once it can.
func TestSyncStopsOnABrokenSigningKey(t *testing.T) {
	g := NewWithT(t)
	srv := startServer(t, nil)
	creds := &fakeCredentials{signErr: errors.New("the signing key Secret ns/key: \"identity\" is not an SSH private key")}
	r, err := Open(context.Background(), Options{
		URL: srv.HTTPAddress() + "/" + repoName, Branch: branch, Dir: filepath.Join(t.TempDir(), "clone"), Path: "apiary",
		Author: Author{Name: "Apiary", Email: "apiary@example.com"}, Credentials: creds,
	})
	g.Expect(err).NotTo(HaveOccurred())
	before := commitCount(t, srv)
	change := map[string][]byte{"team-a/configmap/a.yaml": configMap("team-a", "a", "1")}
	_, err = r.Sync(context.Background(), change, nil, "apiary: signed")
	g.Expect(IsSigningKey(err)).To(BeTrue(), "%v", err)
	g.Expect(err).To(MatchError(ContainSubstring("is not an SSH private key")))
	g.Expect(commitCount(t, srv)).To(Equal(before), "nothing was pushed")

	creds.signErr = nil
	res, err := r.Sync(context.Background(), change, nil, "apiary: signed")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Committed).To(BeTrue())
}

// fakeCredentials hands out fixed credentials or errors.
type fakeCredentials struct {
	auth    transport.AuthMethod
	authErr error
	signer  git.Signer
	signErr error
}

func (f *fakeCredentials) Auth(context.Context) (transport.AuthMethod, error) {
	return f.auth, f.authErr
}
func (f *fakeCredentials) Signer(context.Context) (git.Signer, error) { return f.signer, f.signErr }

func sshKeyPair(t *testing.T) (private []byte, public string) {
	t.Helper()
	private, public, err := testenv.SSHKey()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return private, public
}
