// Package gitauth turns Kubernetes Secrets into what Apiary's Git clones
// need: the auth method of fetch and push (Flux's Secret format) and the
// signer of commits (an OpenPGP or an SSH key), read again whenever a
// Secret changes, so that rotated credentials apply without a restart.
// Secrets never reach errors or logs.
package gitauth

import (
	"errors"
	"fmt"
	neturl "net/url"
	"os"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
)

// Keys of a Git credentials Secret, as Flux's GitRepository reads them.
const (
	UsernameKey    = "username"
	PasswordKey    = "password"
	BearerTokenKey = "bearerToken"
	IdentityKey    = "identity"
	KnownHostsKey  = "known_hosts"
)

// Auth turns the data of a credentials Secret in Flux's format into a
// go-git auth method: identity (an SSH private key, with password when it
// is encrypted) and known_hosts; bearerToken; or username and password.
func Auth(data map[string][]byte, url string) (transport.AuthMethod, error) {
	switch {
	case len(data[IdentityKey]) > 0:
		keys, err := gitssh.NewPublicKeys(sshUser(url), data[IdentityKey], string(data[PasswordKey]))
		if err != nil {
			return nil, fmt.Errorf("%q is not an SSH private key that %q decrypts", IdentityKey, PasswordKey)
		}
		if len(data[KnownHostsKey]) == 0 {
			return nil, fmt.Errorf("the credentials hold an SSH %q but no %q", IdentityKey, KnownHostsKey)
		}
		cb, err := knownHosts(data[KnownHostsKey])
		if err != nil {
			return nil, err
		}
		keys.HostKeyCallback = cb
		return keys, nil
	case len(data[BearerTokenKey]) > 0:
		return &githttp.TokenAuth{Token: string(data[BearerTokenKey])}, nil
	case len(data[UsernameKey]) > 0 || len(data[PasswordKey]) > 0:
		return &githttp.BasicAuth{Username: string(data[UsernameKey]), Password: string(data[PasswordKey])}, nil
	}
	return nil, errors.New("the credentials Secret holds none of identity, bearerToken, username/password")
}

// knownHosts parses known_hosts through a temporary file, which go-git's
// parser reads at once; the file is removed again.
func knownHosts(data []byte) (ssh.HostKeyCallback, error) {
	f, err := os.CreateTemp("", "apiary-known-hosts-")
	if err != nil {
		return nil, fmt.Errorf("writing %s: %w", KnownHostsKey, err)
	}
	defer func() { _ = os.Remove(f.Name()) }()
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("writing %s: %w", KnownHostsKey, err)
	}
	cb, err := gitssh.NewKnownHostsCallback(f.Name())
	if err != nil {
		return nil, fmt.Errorf("reading %q: %w", KnownHostsKey, err)
	}
	return cb, nil
}

// sshUser is the user of an SSH repository URL, "git" when it names none.
func sshUser(raw string) string {
	if u, err := neturl.Parse(raw); err == nil && u.Scheme == "ssh" && u.User != nil && u.User.Username() != "" {
		return u.User.Username()
	}
	if at := strings.Index(raw, "@"); at > 0 && !strings.Contains(raw, "://") {
		return raw[:at] // scp-like user@host:path
	}
	return "git"
}
