package gitauth

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
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

// sshKey returns an OpenSSH private key (encrypted with password when set)
// and its authorized_keys line.
func sshKey(t *testing.T, password string) (private []byte, public string) {
	t.Helper()
	g := NewWithT(t)
	_, key, err := ed25519.GenerateKey(rand.Reader)
	g.Expect(err).NotTo(HaveOccurred())
	var block *pem.Block
	if password == "" {
		block, err = ssh.MarshalPrivateKey(key, "apiary")
	} else {
		block, err = ssh.MarshalPrivateKeyWithPassphrase(key, "apiary", []byte(password))
	}
	g.Expect(err).NotTo(HaveOccurred())
	pub, err := ssh.NewPublicKey(key.Public())
	g.Expect(err).NotTo(HaveOccurred())
	return pem.EncodeToMemory(block), string(ssh.MarshalAuthorizedKey(pub))
}

func TestOpenPGPKey(t *testing.T) {
	plain := armoredPrivate(t, nil)
	locked := armoredPrivate(t, []byte("open sesame"))
	tests := []struct {
		name      string
		key, pass []byte
		wantErr   string
	}{
		{name: "plain key", key: plain},
		{name: "encrypted key with passphrase", key: locked, pass: []byte("open sesame")},
		{name: "encrypted key without passphrase", key: locked, wantErr: "no \"passphrase\""},
		{name: "wrong passphrase", key: locked, pass: []byte("nope"), wantErr: "does not decrypt"},
		{name: "no key", wantErr: "no \"git.asc\""},
		{name: "not a key", key: []byte("hello"), wantErr: "reading \"git.asc\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			e, err := OpenPGPKey(tt.key, tt.pass)
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

func TestSignerChoosesTheKeyKind(t *testing.T) {
	pgp := armoredPrivate(t, nil)
	plain, _ := sshKey(t, "")
	locked, _ := sshKey(t, "s3cret-pass")
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	rsaBlock, err := ssh.MarshalPrivateKey(rsaKey, "")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	tests := []struct {
		name    string
		data    map[string][]byte
		want    string
		wantErr string
	}{
		{name: "OpenPGP", data: map[string][]byte{"git.asc": pgp}, want: "OpenPGP key "},
		{name: "SSH", data: map[string][]byte{"identity": plain}, want: "SSH key SHA256:"},
		{name: "SSH RSA", data: map[string][]byte{"identity": pem.EncodeToMemory(rsaBlock)}, want: "SSH key SHA256:"},
		{name: "encrypted SSH", data: map[string][]byte{"identity": locked, "password": []byte("s3cret-pass")}, want: "SSH key SHA256:"},
		{name: "encrypted SSH without password", data: map[string][]byte{"identity": locked}, wantErr: "encrypted and there is no \"password\""},
		{name: "encrypted SSH, wrong password", data: map[string][]byte{"identity": locked, "password": []byte("wrong-pass")}, wantErr: "does not decrypt"},
		{name: "garbage SSH", data: map[string][]byte{"identity": []byte("-----BEGIN OPENSSH PRIVATE KEY-----\nnope\n")}, wantErr: "is not an SSH private key"},
		{name: "both", data: map[string][]byte{"git.asc": pgp, "identity": plain}, wantErr: "holds both"},
		{name: "neither", data: map[string][]byte{"passphrase": []byte("x")}, wantErr: "holds neither"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			s, err := Signer(tt.data)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				for _, secret := range []string{"s3cret-pass", "wrong-pass"} {
					g.Expect(err.Error()).NotTo(ContainSubstring(secret))
				}
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(Describe(s)).To(HavePrefix(tt.want))
			sig, err := s.Sign(strings.NewReader("tree 1234\n\nmessage\n"))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(sig).NotTo(BeEmpty())
		})
	}
}

// TestSSHSignatureVerifiesWithSSHKeygen signs a message as Git would sign a
// commit and checks the signature with OpenSSH's own `ssh-keygen -Y
// verify` in Git's namespace; a changed message or another key fails.
func TestSSHSignatureVerifiesWithSSHKeygen(t *testing.T) {
	keygen, err := exec.LookPath("ssh-keygen")
	if err != nil {
		t.Skip("ssh-keygen is not installed")
	}
	g := NewWithT(t)
	private, public := sshKey(t, "")
	_, otherPublic := sshKey(t, "")
	s, err := SSHSigner(private, nil)
	g.Expect(err).NotTo(HaveOccurred())
	msg := "tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor Apiary <apiary@example.com> 1700000000 +0000\n\napiary: update\n"
	sig, err := s.Sign(strings.NewReader(msg))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(sig)).To(HavePrefix("-----BEGIN SSH SIGNATURE-----\n"))
	g.Expect(string(sig)).To(HaveSuffix("-----END SSH SIGNATURE-----\n"))

	dir := t.TempDir()
	sigFile := filepath.Join(dir, "msg.sig")
	g.Expect(os.WriteFile(sigFile, sig, 0o600)).To(Succeed())
	verify := func(allowed, message string) error {
		signers := filepath.Join(dir, "allowed_signers")
		g.Expect(os.WriteFile(signers, []byte("apiary@example.com namespaces=\"git\" "+allowed), 0o600)).To(Succeed())
		cmd := exec.Command(keygen, "-Y", "verify", "-f", signers, "-I", "apiary@example.com", "-n", "git", "-s", sigFile)
		cmd.Stdin = strings.NewReader(message)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return &exec.ExitError{ProcessState: cmd.ProcessState, Stderr: out}
		}
		return nil
	}
	g.Expect(verify(public, msg)).To(Succeed())
	g.Expect(verify(public, msg+"tampered")).NotTo(Succeed(), "a changed message does not verify")
	g.Expect(verify(otherPublic, msg)).NotTo(Succeed(), "another key does not verify")
}

// FuzzSigner feeds any Secret data to Signer: it never panics, and an
// error never holds the passphrase or password it was given.
func FuzzSigner(f *testing.F) {
	f.Add([]byte("-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nxx\n-----END PGP PRIVATE KEY BLOCK-----\n"), []byte("passphrase-1"), []byte(""), []byte(""))
	f.Add([]byte(""), []byte(""), []byte("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEA\n-----END OPENSSH PRIVATE KEY-----\n"), []byte("password-1"))
	f.Fuzz(func(t *testing.T, asc, passphrase, identity, password []byte) {
		s, err := Signer(map[string][]byte{OpenPGPKeyKey: asc, OpenPGPPassphraseKey: passphrase, SSHKeyKey: identity, SSHPasswordKey: password})
		if err != nil {
			for _, secret := range [][]byte{passphrase, password} {
				if len(secret) >= 8 && strings.Contains(err.Error(), string(secret)) {
					t.Fatalf("the error reveals a secret: %v", err)
				}
			}
			return
		}
		if _, err := s.Sign(strings.NewReader("message")); err != nil {
			t.Fatalf("a signer that parsed cannot sign: %v", err)
		}
	})
}
