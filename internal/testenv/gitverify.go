package testenv

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/crypto/ssh"
)

// VerifySSHCommit checks the SSH signature of commit in the repository at
// dir (bare or not) with Git's own `git verify-commit`, trusting only
// publicKey (an authorized_keys line) for principal, as a reviewer with
// gpg.format=ssh and gpg.ssh.allowedSignersFile would. It returns Git's
// output as the error when the signature does not verify.
func VerifySSHCommit(dir, commit, principal, publicKey string) error {
	tmp, err := os.MkdirTemp("", "apiary-allowed-signers-")
	if err != nil {
		return fmt.Errorf("verifying %s: %w", commit, err)
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	signers := filepath.Join(tmp, "allowed_signers")
	line := principal + " " + strings.TrimSpace(publicKey) + "\n"
	if err := os.WriteFile(signers, []byte(line), 0o600); err != nil {
		return fmt.Errorf("verifying %s: %w", commit, err)
	}
	cmd := exec.Command("git", "-c", "gpg.format=ssh", "-c", "gpg.ssh.allowedSignersFile="+signers, "verify-commit", "--raw", commit)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+tmp)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git verify-commit %s: %w: %s", commit, err, out)
	}
	return nil
}

// SSHKey returns a new Ed25519 key as an OpenSSH private key and an
// authorized_keys line, for signing commits in tests.
func SSHKey() (private []byte, public string, err error) {
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, "", err
	}
	block, err := ssh.MarshalPrivateKey(key, "apiary")
	if err != nil {
		return nil, "", err
	}
	sshPub, err := ssh.NewPublicKey(pub)
	if err != nil {
		return nil, "", err
	}
	return pem.EncodeToMemory(block), string(ssh.MarshalAuthorizedKey(sshPub)), nil
}
