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
// commit, a file written back to an earlier content, and a force push. A
// ServiceSet paused and unpaused again (a stop and a start) is no flaw,
// but one written back after another change is.
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
	writeFile := func(file, content, message string) {
		t.Helper()
		g.Expect(os.MkdirAll(filepath.Join(work, gitPath), 0o755)).To(Succeed())
		g.Expect(os.WriteFile(filepath.Join(work, gitPath, file), []byte(content), 0o644)).To(Succeed())
		run(work, "add", "-A")
		run(work, "commit", "-m", message)
	}
	write := func(content, message string) { writeFile("a.yaml", content, message) }
	const set = "apiVersion: k0rdent.mirantis.com/v1beta1\nkind: ServiceSet\nmetadata:\n  annotations:\n    apiary.exalsius.ai/applied-digest: sha256:1\n  name: s\n"
	writeFile("b.yaml", set, "a ServiceSet")
	writeFile("b.yaml", strings.Replace(set, "sha256:1\n", "sha256:2\n    k0rdent.mirantis.com/service-set-paused: \"true\"\n", 1), "stop")
	writeFile("b.yaml", set, "start")
	writeFile("b.yaml", strings.Replace(set, "sha256:1\n", "sha256:3\n    other: x\n", 1), "another change")
	writeFile("b.yaml", set, "back to the first content")
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
		ContainSubstring(gitPath+"/b.yaml was written again"),
		ContainSubstring("is not a fast forward"),
	))
	g.Expect(h.problems).To(HaveLen(4), "%v", h.problems)
	g.Expect(h.pauses).To(Equal(1), "the start that lifted the pause")
}
