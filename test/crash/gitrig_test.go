package crash_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/apiaryhq/apiary/internal/testenv"
)

const (
	// repoName is the bare repository Flux reads; apiaryRepo is a second
	// name of it, the one Apiary pushes to, so that a stall armed for
	// Apiary's requests never catches Flux's.
	repoName, apiaryRepo = "crash.git", "apiary.git"
	gitBranch            = "main"
	// gitPath is the folder Apiary owns and Flux applies.
	gitPath  = "crash"
	fluxNS   = "flux-system"
	fluxName = "crash"
)

// gitRig is a Git server with the repository Apiary commits to, whose
// update hook logs every branch move (and flags those that are not fast
// forwards), and Flux's source- and kustomize-controller applying the
// repository's folder to the management cluster.
type gitRig struct {
	server *testenv.GitServer
	flux   *testenv.Flux
	// bare is the repository on disk; refLog the hook's log.
	bare, refLog string
	// name is the GitRepository's and the Kustomization's.
	name string
}

// rigs counts the rigs started, so that each has its own folders and Flux
// objects: a stopped rig's Kustomization keeps its finalizer.
var rigs atomic.Int32

// updateHook logs "<old> <new> ff|FORCE" for every branch update of a push.
const updateHook = `#!/bin/sh
zero=0000000000000000000000000000000000000000
kind=ff
if [ "$2" != "$zero" ] && [ "$3" != "$zero" ] && ! git merge-base --is-ancestor "$2" "$3"; then kind=FORCE; fi
[ "$3" = "$zero" ] && kind=DELETE
echo "$2 $3 $kind" >> "%s"
exit 0
`

// startGitRig starts the Git server and Flux for one test; both stop at its end.
func startGitRig(t testing.TB) *gitRig {
	t.Helper()
	ctx := context.Background()
	name, dir := fluxName, workDir
	if n := rigs.Add(1); n > 1 {
		name = fmt.Sprintf("%s-%d", fluxName, n)
		dir = filepath.Join(workDir, name)
	}
	root := filepath.Join(dir, "git")
	server, err := testenv.StartGitServer(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = server.Stop() })
	rig := &gitRig{server: server, bare: filepath.Join(root, repoName), refLog: filepath.Join(dir, "ref-updates.log"), name: name}
	if err := server.InitRepo(repoName, gitBranch); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(repoName, filepath.Join(root, apiaryRepo)); err != nil {
		t.Fatal(err)
	}
	hook := filepath.Join(rig.bare, "hooks", "update")
	if err := os.MkdirAll(filepath.Dir(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hook, fmt.Appendf(nil, updateHook, rig.refLog), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := server.Commit(repoName, gitBranch, "fleet: start", map[string][]byte{"README.md": []byte("fleet\n")}); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fluxNS}}); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	objs, err := testenv.FluxSync{Namespace: fluxNS, Name: name, URL: server.RepoURL(repoName), Branch: gitBranch, Path: gitPath}.Objects()
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatalf("creating %s %s: %v", o.GetKind(), o.GetName(), err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), o) })
	}
	if rig.flux, err = testenv.StartFlux(ctx, env, testenv.FluxOptions{Namespace: fluxNS, Dir: filepath.Join(dir, "flux")}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			fmt.Fprintln(os.Stderr, "Flux logs:\n"+rig.flux.Logs(4000))
		}
		_ = rig.flux.Stop()
	})
	return rig
}

// managerFlags are the flags of a manager delivering to the rig's
// repository, with its persistent clone in checkout.
func (rig *gitRig) managerFlags(checkout string) []string {
	return rig.managerFlagsOn(checkout, apiaryRepo)
}

// managerFlagsOn are managerFlags for pushing to the repository's name
// repo (see alias).
func (rig *gitRig) managerFlagsOn(checkout, repo string) []string {
	return []string{
		"--delivery=git",
		"--git-url=" + rig.server.RepoURL(repo),
		"--git-repository=" + fluxNS + "/" + rig.name,
		"--git-kustomization=" + fluxNS + "/" + rig.name,
		"--git-path=" + gitPath,
		"--git-checkout-dir=" + checkout,
		"--git-commit-window=300ms",
	}
}

// git runs git in the bare repository and returns its output.
func (rig *gitRig) git(args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = rig.bare
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// head is the branch's commit.
func (rig *gitRig) head() (string, error) {
	out, err := rig.git("rev-parse", gitBranch)
	return strings.TrimSpace(out), err
}

// files lists the files under gitPath at the branch head, without the
// generated kustomization.yaml files.
func (rig *gitRig) files() (map[string]bool, error) {
	out, err := rig.git("ls-tree", "-r", "--name-only", gitBranch, "--", gitPath)
	if err != nil {
		return nil, err
	}
	files := map[string]bool{}
	for _, f := range strings.Fields(out) {
		if filepath.Base(f) != "kustomization.yaml" {
			files[f] = true
		}
	}
	return files, nil
}

// show returns a file at the branch head.
func (rig *gitRig) show(path string) (string, error) { return rig.git("show", gitBranch+":"+path) }

// objectFile is the path of a delivered object of kind (lower case) in ns.
func objectFile(ns, kind, name string) string {
	return gitPath + "/" + ns + "/" + kind + "/" + name + ".yaml"
}

// fluxApplied is the revision the Kustomization last applied, and whether
// it is Ready.
func (rig *gitRig) fluxApplied(ctx context.Context) (string, bool, error) {
	ks := &unstructured.Unstructured{}
	ks.SetAPIVersion("kustomize.toolkit.fluxcd.io/v1")
	ks.SetKind("Kustomization")
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: rig.name}, ks); err != nil {
		return "", false, err
	}
	rev, _, _ := unstructured.NestedString(ks.Object, "status", "lastAppliedRevision")
	conds, _, _ := unstructured.NestedSlice(ks.Object, "status", "conditions")
	ready := false
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "Ready" && m["status"] == "True" {
			ready = true
		}
	}
	return rev, ready, nil
}

// alias gives the repository another name, so that a stall armed for one
// manager's requests never catches another's; it returns the name.
func (rig *gitRig) alias(t testing.TB, name string) string {
	t.Helper()
	if err := os.Symlink(repoName, filepath.Join(filepath.Dir(rig.bare), name)); err != nil {
		t.Fatal(err)
	}
	return name
}
