package release

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apiaryhq/apiary/internal/testenv"
)

// scratchRepo makes a Git repository with the given commits (empty ones)
// and tags: a subject starting with "tag " tags the commit before it.
func scratchRepo(t *testing.T, history ...string) string {
	t.Helper()
	dir := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	git("init", "-q", "-b", "main")
	for _, h := range history {
		if tag, ok := strings.CutPrefix(h, "tag "); ok {
			git("tag", tag)
			continue
		}
		git("commit", "-q", "--allow-empty", "-m", h)
	}
	return dir
}

func notes(t *testing.T, repo, tag string) (string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join(testenv.RepoRoot(), "hack", "release-notes.sh"), tag)
	cmd.Dir = repo
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestReleaseNotesListTheCommitsSinceThePreviousTag(t *testing.T) {
	repo := scratchRepo(t,
		"feat(api): Colonies", "Initial import", "tag v0.1.0",
		"fix(delivery): retry pushes", "feat(image)!: run as 65532", "chore: tidy", "docs: versioning policy",
		"tag v0.2.0", "feat: after the release")
	got, err := notes(t, repo, "v0.2.0")
	if err != nil {
		t.Fatalf("%v\n%s", err, got)
	}
	for _, want := range []string{
		"## Apiary 0.2.0", "Changes since v0.1.0.",
		"### Features\n\n- **breaking** **image** run as 65532 (",
		"### Fixes\n\n- **delivery** retry pushes (",
		"### Documentation\n\n- versioning policy (",
		"### Other changes\n\n- tidy (",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("notes lack %q:\n%s", want, got)
		}
	}
	for _, other := range []string{"Colonies", "Initial import", "after the release"} {
		if strings.Contains(got, other) {
			t.Errorf("notes for v0.2.0 list %q, a commit of another release:\n%s", other, got)
		}
	}

	first, err := notes(t, repo, "v0.1.0")
	if err != nil {
		t.Fatalf("%v\n%s", err, first)
	}
	if !strings.Contains(first, "The first release.") || !strings.Contains(first, "- **api** Colonies (") ||
		!strings.Contains(first, "### Other changes\n\n- Initial import (") {
		t.Errorf("notes of the first tag:\n%s", first)
	}
	if out, err := notes(t, repo, "v9.9.9"); err == nil || !strings.Contains(out, "no tag v9.9.9") {
		t.Errorf("an unknown tag gave %v:\n%s", err, out)
	}
}
