package gitrepo

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestCheckRemoteURL(t *testing.T) {
	for _, tc := range []struct {
		url     string
		allowed bool
	}{
		{"https://git.example.com/org/repo.git", true},
		{"http://gitea.git.svc:3000/org/repo", true},
		{"ssh://git@github.com/org/repo", true},
		{"https://user:secret@git.example.com/repo", true},
		{"file:///var/lib/apiary/git/tenant-a", false},
		{"/tmp/apiary-git-123", false},
		{"../other-tenant", false},
		{"git@github.com:org/repo.git", false}, // scp-like: Flux wants ssh://
		{"https:///no-host", false},
		{"ext::sh -c touch% /tmp/pwned", false},
		{"", false},
	} {
		t.Run(tc.url, func(t *testing.T) {
			g := NewWithT(t)
			err := CheckRemoteURL(tc.url)
			if tc.allowed {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(HaveOccurred())
			g.Expect(err.Error()).NotTo(ContainSubstring("secret"))
		})
	}
	NewWithT(t).Expect(CheckRemoteURL("file://user:secret@host/x")).To(MatchError(Not(ContainSubstring("secret"))), "credentials are redacted")
}
