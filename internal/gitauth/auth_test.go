package gitauth

import (
	"strings"
	"testing"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	. "github.com/onsi/gomega"
)

func sshIdentity(t *testing.T) (private []byte, knownHosts []byte) {
	t.Helper()
	private, _ = sshKey(t, "")
	_, hostKey := sshKey(t, "")
	return private, []byte("git.example.com " + hostKey)
}

func TestAuthFromSecret(t *testing.T) {
	identity, knownHosts := sshIdentity(t)
	tests := []struct {
		name    string
		data    map[string][]byte
		url     string
		check   func(g Gomega, auth any)
		wantErr string
	}{
		{name: "basic", data: map[string][]byte{"username": []byte("bot"), "password": []byte("pw")}, url: "https://git.example.com/fleet.git",
			check: func(g Gomega, auth any) {
				g.Expect(auth).To(Equal(&githttp.BasicAuth{Username: "bot", Password: "pw"}))
			}},
		{name: "bearer", data: map[string][]byte{"bearerToken": []byte("tok")}, url: "https://git.example.com/fleet.git",
			check: func(g Gomega, auth any) { g.Expect(auth).To(Equal(&githttp.TokenAuth{Token: "tok"})) }},
		{name: "ssh with user in URL", data: map[string][]byte{"identity": identity, "known_hosts": knownHosts}, url: "ssh://deploy@git.example.com/fleet.git",
			check: func(g Gomega, auth any) {
				keys, ok := auth.(*gitssh.PublicKeys)
				g.Expect(ok).To(BeTrue())
				g.Expect(keys.User).To(Equal("deploy"))
				g.Expect(keys.HostKeyCallback).NotTo(BeNil())
			}},
		{name: "ssh scp-like", data: map[string][]byte{"identity": identity, "known_hosts": knownHosts}, url: "git@git.example.com:fleet.git",
			check: func(g Gomega, auth any) { g.Expect(auth.(*gitssh.PublicKeys).User).To(Equal("git")) }},
		{name: "ssh without known_hosts", data: map[string][]byte{"identity": identity}, url: "ssh://git@git.example.com/fleet.git", wantErr: "no \"known_hosts\""},
		{name: "bad identity", data: map[string][]byte{"identity": []byte("nope"), "known_hosts": knownHosts}, url: "ssh://git.example.com/x", wantErr: "is not an SSH private key"},
		{name: "empty", data: map[string][]byte{}, url: "https://git.example.com/x", wantErr: "holds none of"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			auth, err := Auth(tt.data, tt.url)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			tt.check(g, auth)
		})
	}
}

// FuzzAuth feeds any Secret data to Auth: it never panics, and an error
// never holds the password, token or key it was given.
func FuzzAuth(f *testing.F) {
	f.Add([]byte("bot"), []byte("pw"), []byte(""), []byte(""), []byte(""))
	f.Add([]byte(""), []byte(""), []byte("tok"), []byte(""), []byte(""))
	f.Add([]byte(""), []byte("secret-pass"), []byte(""), []byte("-----BEGIN OPENSSH PRIVATE KEY-----\nxx\n"), []byte("host ssh-ed25519 AAAA"))
	f.Fuzz(func(t *testing.T, user, pass, token, identity, known []byte) {
		data := map[string][]byte{UsernameKey: user, PasswordKey: pass, BearerTokenKey: token, IdentityKey: identity, KnownHostsKey: known}
		_, err := Auth(data, "ssh://git@git.example.com/fleet.git")
		if err != nil {
			for _, secret := range [][]byte{pass, token, identity} {
				if len(secret) >= 8 && strings.Contains(err.Error(), string(secret)) {
					t.Fatalf("the error reveals a secret: %v", err)
				}
			}
		}
	})
}
