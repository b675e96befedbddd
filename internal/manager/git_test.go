package manager

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"testing"

	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	. "github.com/onsi/gomega"
	"golang.org/x/crypto/ssh"
)

func sshIdentity(t *testing.T) (private []byte, knownHosts []byte) {
	t.Helper()
	g := NewWithT(t)
	_, key, err := ed25519.GenerateKey(rand.Reader)
	g.Expect(err).NotTo(HaveOccurred())
	block, err := ssh.MarshalPrivateKey(key, "")
	g.Expect(err).NotTo(HaveOccurred())
	hostPub, _, err := ed25519.GenerateKey(rand.Reader)
	g.Expect(err).NotTo(HaveOccurred())
	sshPub, err := ssh.NewPublicKey(hostPub)
	g.Expect(err).NotTo(HaveOccurred())
	return pem.EncodeToMemory(block), []byte("git.example.com " + string(ssh.MarshalAuthorizedKey(sshPub)))
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
		{name: "ssh without known_hosts", data: map[string][]byte{"identity": identity}, url: "ssh://git@git.example.com/fleet.git", wantErr: "no known_hosts"},
		{name: "bad identity", data: map[string][]byte{"identity": []byte("nope"), "known_hosts": knownHosts}, url: "ssh://git.example.com/x", wantErr: "SSH identity"},
		{name: "empty", data: map[string][]byte{}, url: "https://git.example.com/x", wantErr: "holds none of"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			auth, err := authFromSecret(tt.data, tt.url)
			if tt.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tt.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			tt.check(g, auth)
		})
	}
}

func TestParseObjectRef(t *testing.T) {
	g := NewWithT(t)
	ref, err := ParseObjectRef("--x", "flux-system/fleet")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ref.String()).To(Equal("flux-system/fleet"))
	ref, err = ParseObjectRef("--x", "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ref).To(BeNil())
	for _, bad := range []string{"fleet", "/fleet", "ns/", "a/b/c"} {
		_, err := ParseObjectRef("--x", bad)
		g.Expect(err).To(MatchError(ContainSubstring("--x must be <namespace>/<name>")), bad)
	}
}
