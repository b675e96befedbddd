package gitops_test

import (
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/object"
	. "github.com/onsi/gomega"

	"github.com/apiaryhq/apiary/internal/testenv"
)

// TestHistoryHasNoPlaintextSecretsAndNoEmptyCommits scans the whole
// repository history after the other tests (Go runs this file last): no
// blob of any commit holds a secret in plaintext, no commit is empty, and
// every commit of Apiary carries an SSH signature that git verify-commit
// accepts.
func TestHistoryHasNoPlaintextSecretsAndNoEmptyCommits(t *testing.T) {
	g := NewWithT(t)
	commits := history(t)
	g.Expect(len(commits)).To(BeNumerically(">", 1))
	apiary := 0
	for _, c := range commits {
		tree, err := c.Tree()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(tree.Files().ForEach(func(f *object.File) error {
			s, err := f.Contents()
			if err != nil {
				return err
			}
			g.Expect(s).NotTo(ContainSubstring(secretValue), "%s in commit %s", f.Name, c.Hash)
			return nil
		})).To(Succeed())
		if c.NumParents() == 0 {
			continue
		}
		parent, err := c.Parent(0)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(c.TreeHash).NotTo(Equal(parent.TreeHash), "commit %s (%s) changes nothing", c.Hash, firstLine(c.Message))
		if c.Author.Name == "Apiary" {
			apiary++
			g.Expect(testenv.VerifySSHCommit(repoDir(), c.Hash.String(), authorEmail, signingPublicKey)).To(Succeed(),
				"Apiary's commit %s (%s) is signed with the SSH key", c.Hash, firstLine(c.Message))
		}
	}
	g.Expect(apiary).To(BeNumerically(">", 3), "Apiary committed for the tests above")
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
