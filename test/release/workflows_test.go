// Package release checks the release machinery offline: the GitHub Actions
// workflows pass actionlint (as a library, so no network and no binary), pin
// every action by commit, run what the README and the release process say,
// build with the Dockerfile's Go; and the release-notes script groups the
// commits since the previous tag.
package release

import (
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"

	"github.com/apiaryhq/apiary/internal/testenv"
)

func workflowFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(testenv.RepoRoot(), ".github", "workflows", "*.yml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no workflows under .github/workflows (%v)", err)
	}
	return files
}

// lint runs actionlint on one workflow; shellcheck and pyflakes are not run
// (they are not Go modules), everything else actionlint checks is.
func lint(t *testing.T, path string, content []byte) []*actionlint.Error {
	t.Helper()
	l, err := actionlint.NewLinter(io.Discard, &actionlint.LinterOptions{WorkingDir: testenv.RepoRoot()})
	if err != nil {
		t.Fatal(err)
	}
	errs, err := l.Lint(path, content, nil)
	if err != nil {
		t.Fatalf("actionlint %s: %v", path, err)
	}
	return errs
}

func TestWorkflowsPassActionlint(t *testing.T) {
	for _, f := range workflowFiles(t) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range lint(t, f, b) {
			t.Errorf("%s:%d:%d: %s [%s]", filepath.Base(f), e.Line, e.Column, e.Message, e.Kind)
		}
	}
}

// TestActionlintCatchesBrokenWorkflows shows the lint above is not a no-op:
// each mistake, made in a copy of a sound workflow, is reported.
func TestActionlintCatchesBrokenWorkflows(t *testing.T) {
	const sound = `name: t
on:
  push:
    tags: ["v*"]
permissions:
  contents: read
jobs:
  release:
    runs-on: ubuntu-24.04
    permissions:
      id-token: write
    steps:
      - uses: actions/checkout@11bd71901bbe5b1630ceea73d27597364c9af683 # v4.2.2
      - id: push
        run: echo "digest=sha256:0" >> "$GITHUB_OUTPUT"
      - run: echo "${{ steps.push.outputs.digest }}"
`
	if errs := lint(t, "sound.yml", []byte(sound)); len(errs) != 0 {
		t.Fatalf("the sound workflow is reported: %v", errs[0])
	}
	for _, tc := range []struct{ name, from, to, want string }{
		{"unknown runner", "runs-on: ubuntu-24.04", "runs-on: ubuntu-2404", `label "ubuntu-2404" is unknown`},
		{"undefined step", "steps.push.outputs", "steps.pushed.outputs", `property "pushed" is not defined`},
		{"bad permission", "id-token: write", "id-token: writ", `"writ" is invalid as permission of scope "id-token"`},
		{"script injection", `echo "${{ steps.push.outputs.digest }}"`, `echo "${{ github.event.head_commit.message }}"`, "potentially untrusted"},
		{"unknown trigger", "push:", "pushed:", `unknown Webhook event "pushed"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			broken := strings.Replace(sound, tc.from, tc.to, 1)
			if broken == sound {
				t.Fatalf("%q is not in the workflow", tc.from)
			}
			var msgs []string
			for _, e := range lint(t, "broken.yml", []byte(broken)) {
				msgs = append(msgs, e.Message)
			}
			if !slices.ContainsFunc(msgs, func(m string) bool { return strings.Contains(m, tc.want) }) {
				t.Errorf("actionlint reported %q, want an error containing %q", msgs, tc.want)
			}
		})
	}
}

// steps parses a workflow and returns the uses and run of every step.
func steps(t *testing.T, path string) (w *actionlint.Workflow, uses, runs []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	w, errs := actionlint.Parse(b)
	if len(errs) != 0 {
		t.Fatalf("%s: %v", path, errs[0])
	}
	for _, j := range w.Jobs {
		for _, s := range j.Steps {
			switch e := s.Exec.(type) {
			case *actionlint.ExecAction:
				uses = append(uses, e.Uses.Value)
			case *actionlint.ExecRun:
				runs = append(runs, e.Run.Value)
			}
		}
	}
	return w, uses, runs
}

func TestWorkflowsPinActionsByCommit(t *testing.T) {
	pinned := regexp.MustCompile(`^[\w.-]+/[\w.-]+@[0-9a-f]{40}$`)
	for _, f := range workflowFiles(t) {
		_, uses, _ := steps(t, f)
		for _, u := range uses {
			if !pinned.MatchString(u) {
				t.Errorf("%s uses %q: pin actions by full commit SHA (a tag can be moved)", filepath.Base(f), u)
			}
		}
	}
}

func TestCIRunsTheReadmeCommands(t *testing.T) {
	root := testenv.RepoRoot()
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	w, _, runs := steps(t, filepath.Join(root, ".github", "workflows", "ci.yml"))
	for _, cmd := range []string{"make test", "make verify"} {
		if !slices.Contains(runs, cmd) {
			t.Errorf("ci.yml does not run %q (runs %q)", cmd, runs)
		}
	}
	if !strings.Contains(string(readme), "```sh\nmake test\n```") {
		t.Error("the README no longer gives `make test` as the test command; CI runs it")
	}
	if w.On == nil || len(w.On) == 0 {
		t.Error("ci.yml has no trigger")
	}
}

// TestReleaseWorkflowReleases checks the release workflow's trigger, its
// permissions and that it runs each step of docs/release.md.
func TestReleaseWorkflowReleases(t *testing.T) {
	path := filepath.Join(testenv.RepoRoot(), ".github", "workflows", "release.yml")
	w, uses, runs := steps(t, path)
	var tags []string
	for _, ev := range w.On {
		if we, ok := ev.(*actionlint.WebhookEvent); ok && we.Hook.Value == "push" && !we.Tags.IsEmpty() {
			for _, tag := range we.Tags.Values {
				tags = append(tags, tag.Value)
			}
		}
	}
	if !slices.Equal(tags, []string{"v*"}) {
		t.Errorf("release.yml runs on tags %q, want v*", tags)
	}
	perms := map[string]string{}
	for _, j := range w.Jobs {
		if j.Permissions != nil {
			for k, s := range j.Permissions.Scopes {
				perms[k] = s.Value.Value
			}
		}
	}
	for k, v := range map[string]string{"id-token": "write", "packages": "write", "contents": "write"} {
		if perms[k] != v {
			t.Errorf("release job permission %s: %q, want %q", k, perms[k], v)
		}
	}
	script := strings.Join(runs, "\n")
	for _, want := range []string{"make image", "crane push bin/image/oci", "cosign sign --yes --recursive",
		"cosign attest --yes --type cyclonedx", "helm package charts/apiary", "helm push", "oci://",
		"hack/release-notes.sh \"$GITHUB_REF_NAME\"", "gh release create"} {
		if !strings.Contains(script, want) {
			t.Errorf("release.yml never runs %q", want)
		}
	}
	if !slices.ContainsFunc(uses, func(u string) bool { return strings.HasPrefix(u, "sigstore/cosign-installer@") }) {
		t.Error("release.yml does not install cosign")
	}
}

// TestWorkflowsBuildWithTheDockerfilesGo: the workflows and the Dockerfile
// build with one Go release, or their binaries differ.
func TestWorkflowsBuildWithTheDockerfilesGo(t *testing.T) {
	root := testenv.RepoRoot()
	dockerfile, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^ARG GO_VERSION=(\S+)$`).FindSubmatch(dockerfile)
	if m == nil {
		t.Fatal("the Dockerfile has no ARG GO_VERSION")
	}
	for _, f := range workflowFiles(t) {
		w, _, _ := steps(t, f)
		if w.Env == nil || w.Env.Vars["go_version"] == nil {
			t.Errorf("%s sets no GO_VERSION", filepath.Base(f))
			continue
		}
		if got := w.Env.Vars["go_version"].Value.Value; got != string(m[1]) {
			t.Errorf("%s builds with Go %s, the Dockerfile with %s", filepath.Base(f), got, m[1])
		}
	}
}
