package gitauth

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/ProtonMail/go-crypto/openpgp"
	git "github.com/go-git/go-git/v5"
	"github.com/hiddeco/sshsig"
	"golang.org/x/crypto/ssh"
)

// Keys of a signing key Secret: an armored OpenPGP private key with its
// optional passphrase, as Flux's image-automation-controller names them;
// or an SSH private key with its optional password, named as in Flux's
// Git credentials, so that a deploy key's Secret can also sign.
const (
	OpenPGPKeyKey        = "git.asc"
	OpenPGPPassphraseKey = "passphrase"
	SSHKeyKey            = IdentityKey
	SSHPasswordKey       = PasswordKey
)

// SSHSignatureNamespace is the namespace of Git's SSH signatures, as
// `ssh-keygen -Y sign -n git` writes and `git verify-commit` checks.
const SSHSignatureNamespace = "git"

// Signer turns the data of a signing key Secret into a commit signer:
// OpenPGP with git.asc, SSH (Git's gpg.format=ssh) with identity. A Secret
// holding both is refused, as one holding neither.
func Signer(data map[string][]byte) (git.Signer, error) {
	pgp, sshKey := len(data[OpenPGPKeyKey]) > 0, len(data[SSHKeyKey]) > 0
	switch {
	case pgp && sshKey:
		return nil, fmt.Errorf("the signing key Secret holds both %q and %q; keep one", OpenPGPKeyKey, SSHKeyKey)
	case pgp:
		e, err := OpenPGPKey(data[OpenPGPKeyKey], data[OpenPGPPassphraseKey])
		if err != nil {
			return nil, err
		}
		return openPGPSigner{e}, nil
	case sshKey:
		return SSHSigner(data[SSHKeyKey], data[SSHPasswordKey])
	}
	return nil, fmt.Errorf("the signing key Secret holds neither %q (OpenPGP) nor %q (SSH)", OpenPGPKeyKey, SSHKeyKey)
}

// OpenPGPKey decodes the first key of an armored key ring and decrypts it
// (and its subkeys) with the passphrase when it is encrypted.
func OpenPGPKey(armored, passphrase []byte) (*openpgp.Entity, error) {
	if len(armored) == 0 {
		return nil, fmt.Errorf("no %q", OpenPGPKeyKey)
	}
	ring, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(armored))
	if err != nil {
		return nil, fmt.Errorf("reading %q: %w", OpenPGPKeyKey, err)
	}
	if len(ring) == 0 || ring[0].PrivateKey == nil {
		return nil, fmt.Errorf("%q holds no private key", OpenPGPKeyKey)
	}
	e := ring[0]
	if e.PrivateKey.Encrypted {
		if len(passphrase) == 0 {
			return nil, fmt.Errorf("the key is encrypted and there is no %q", OpenPGPPassphraseKey)
		}
		if err := e.DecryptPrivateKeys(passphrase); err != nil {
			return nil, fmt.Errorf("the %q does not decrypt the key", OpenPGPPassphraseKey)
		}
	}
	return e, nil
}

// openPGPSigner makes detached armored OpenPGP signatures, as go-git does
// with CommitOptions.SignKey.
type openPGPSigner struct{ key *openpgp.Entity }

func (s openPGPSigner) Sign(message io.Reader) ([]byte, error) {
	var b bytes.Buffer
	if err := openpgp.ArmoredDetachSign(&b, s.key, message, nil); err != nil {
		return nil, fmt.Errorf("signing with the OpenPGP key: %w", err)
	}
	return b.Bytes(), nil
}

// SSHSigner reads an SSH private key (OpenSSH, PKCS#1 or PKCS#8 PEM),
// decrypted with password when it is encrypted, into a signer of Git's SSH
// signatures: SSHSIG over the commit in the "git" namespace with SHA-512,
// armored as -----BEGIN SSH SIGNATURE-----.
func SSHSigner(pemKey, password []byte) (git.Signer, error) {
	key, err := ssh.ParsePrivateKey(pemKey)
	var missing *ssh.PassphraseMissingError
	switch {
	case errors.As(err, &missing) && len(password) == 0:
		return nil, fmt.Errorf("the SSH key %q is encrypted and there is no %q", SSHKeyKey, SSHPasswordKey)
	case errors.As(err, &missing):
		if key, err = ssh.ParsePrivateKeyWithPassphrase(pemKey, password); err != nil {
			return nil, fmt.Errorf("the %q does not decrypt the SSH key %q", SSHPasswordKey, SSHKeyKey)
		}
	case err != nil:
		return nil, fmt.Errorf("%q is not an SSH private key", SSHKeyKey)
	}
	return sshSigner{key}, nil
}

type sshSigner struct{ key ssh.Signer }

func (s sshSigner) Sign(message io.Reader) ([]byte, error) {
	sig, err := sshsig.Sign(message, s.key, sshsig.HashSHA512, SSHSignatureNamespace)
	if err != nil {
		return nil, fmt.Errorf("signing with the SSH key: %w", err)
	}
	return sshsig.Armor(sig), nil
}

// Describe names a signer's key without revealing it, for logs: the SSH
// key's fingerprint or the OpenPGP key's ID.
func Describe(s git.Signer) string {
	switch k := s.(type) {
	case sshSigner:
		return "SSH key " + ssh.FingerprintSHA256(k.key.PublicKey())
	case openPGPSigner:
		return "OpenPGP key " + k.key.PrimaryKey.KeyIdString()
	}
	return "no key"
}
