package crash_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// TestHistoryCheckFindsWhatItLooksFor gives checkHistory a repository
// with each flaw it looks for, pushed as a careless writer would: an empty
// commit, a file written back to an earlier content, and a force push.
func TestHistoryCheckFindsWhatItLooksFor(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	rig := &gitRig{bare: filepath.Join(dir, "repo.git"), refLog: filepath.Join(dir, "ref-updates.log")}
	work := filepath.Join(dir, "work")
	run := func(in string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = in
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		out, err := cmd.CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), "git %s: %s", strings.Join(args, " "), out)
	}
	run(dir, "init", "--bare", "--initial-branch="+gitBranch, rig.bare)
	g.Expect(os.WriteFile(filepath.Join(rig.bare, "hooks", "update"), fmt.Appendf(nil, updateHook, rig.refLog), 0o755)).To(Succeed())
	run(dir, "init", "--initial-branch="+gitBranch, work)
	write := func(content, message string) {
		t.Helper()
		g.Expect(os.MkdirAll(filepath.Join(work, gitPath), 0o755)).To(Succeed())
		g.Expect(os.WriteFile(filepath.Join(work, gitPath, "a.yaml"), []byte(content), 0o644)).To(Succeed())
		run(work, "add", "-A")
		run(work, "commit", "-m", message)
	}
	write("one\n", "first")
	run(work, "remote", "add", "origin", rig.bare)
	run(work, "push", "origin", gitBranch)
	write("two\n", "second")
	run(work, "commit", "--allow-empty", "-m", "empty")
	write("one\n", "back to the first content")
	write("four\n", "dropped by the force push")
	run(work, "push", "origin", gitBranch)
	run(work, "reset", "--hard", "HEAD~1")
	write("three\n", "rewritten")
	run(work, "push", "--force", "origin", gitBranch)

	h, err := rig.checkHistory()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h.problems).To(ContainElements(
		ContainSubstring("changes nothing (empty commit)"),
		ContainSubstring(gitPath+"/a.yaml was written again"),
		ContainSubstring("is not a fast forward"),
	))
	g.Expect(h.problems).To(HaveLen(3), "%v", h.problems)
}
