package gitrepo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fluxcd/pkg/gittestserver"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"
)

const (
	branch   = "main"
	repoName = "fleet.git"
)

func configMap(ns, name, value string) []byte {
	return []byte(fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\ndata:\n  v: %q\n", name, ns, value))
}

// startServer starts an HTTP Git server holding repoName with one commit on branch.
func startServer(t *testing.T, configure func(*gittestserver.GitServer)) *gittestserver.GitServer {
	t.Helper()
	g := NewWithT(t)
	srv, err := gittestserver.NewTempGitServer()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = os.RemoveAll(srv.Root()) })
	srv.AutoCreate()
	if configure != nil {
		configure(srv)
	}
	fixture := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(fixture, "README.md"), []byte("fleet\n"), 0o644)).To(Succeed())
	g.Expect(srv.InitRepo(fixture, branch, repoName)).To(Succeed())
	g.Expect(srv.StartHTTP()).To(Succeed())
	t.Cleanup(srv.StopHTTP)
	return srv
}

func openRepo(t *testing.T, srv *gittestserver.GitServer, dir string) *Repo {
	t.Helper()
	r, err := Open(context.Background(), Options{
		URL: srv.HTTPAddress() + "/" + repoName, Branch: branch, Dir: dir, Path: "apiary",
		Author: Author{Name: "Apiary", Email: "apiary@example.com"},
	})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return r
}

// remoteHead returns the commit at the head of branch in the server's bare repository.
func remoteHead(t *testing.T, srv *gittestserver.GitServer) *object.Commit {
	t.Helper()
	g := NewWithT(t)
	bare, err := git.PlainOpen(filepath.Join(srv.Root(), repoName))
	g.Expect(err).NotTo(HaveOccurred())
	ref, err := bare.Reference(plumbing.NewBranchReferenceName(branch), true)
	g.Expect(err).NotTo(HaveOccurred())
	c, err := bare.CommitObject(ref.Hash())
	g.Expect(err).NotTo(HaveOccurred())
	return c
}

func commitCount(t *testing.T, srv *gittestserver.GitServer) int {
	t.Helper()
	n := 0
	iter := object.NewCommitPreorderIter(remoteHead(t, srv), nil, nil)
	NewWithT(t).Expect(iter.ForEach(func(*object.Commit) error { n++; return nil })).To(Succeed())
	return n
}

// remoteFiles returns every file in the server's branch head, by full path.
func remoteFiles(t *testing.T, srv *gittestserver.GitServer) map[string]string {
	t.Helper()
	g := NewWithT(t)
	tree, err := remoteHead(t, srv).Tree()
	g.Expect(err).NotTo(HaveOccurred())
	out := map[string]string{}
	g.Expect(tree.Files().ForEach(func(f *object.File) error {
		s, err := f.Contents()
		out[f.Name] = s
		return err
	})).To(Succeed())
	return out
}

func resourcesOf(t *testing.T, content string) []string {
	t.Helper()
	var k types.Kustomization
	NewWithT(t).Expect(yaml.Unmarshal([]byte(content), &k)).To(Succeed())
	return k.Resources
}

func TestSyncWritesCommitsOnlyOnChangeAndDeletes(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv := startServer(t, nil)
	r := openRepo(t, srv, filepath.Join(t.TempDir(), "clone"))
	before := commitCount(t, srv)

	objs := map[string][]byte{
		"team-a/configmap/b.yaml": configMap("team-a", "b", "1"),
		"team-a/configmap/a.yaml": configMap("team-a", "a", "1"),
		"team-b/configmap/c.yaml": configMap("team-b", "c", "1"),
	}
	res, err := r.Sync(ctx, objs, nil, "apiary: render colony x")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Committed).To(BeTrue())
	g.Expect(res.Commit).To(Equal(remoteHead(t, srv).Hash.String()))
	g.Expect(r.Head()).To(Equal(res.Commit))
	g.Expect(res.Changed).To(ContainElements("team-a/configmap/a.yaml", "kustomization.yaml"))
	g.Expect(commitCount(t, srv)).To(Equal(before + 1))

	files := remoteFiles(t, srv)
	g.Expect(files).To(HaveKey("README.md"))
	g.Expect(files["apiary/team-a/configmap/a.yaml"]).To(Equal(string(objs["team-a/configmap/a.yaml"])))
	g.Expect(resourcesOf(t, files["apiary/kustomization.yaml"])).To(Equal([]string{"team-a", "team-b"}))
	g.Expect(resourcesOf(t, files["apiary/team-a/kustomization.yaml"])).To(Equal([]string{"configmap"}))
	g.Expect(resourcesOf(t, files["apiary/team-a/configmap/kustomization.yaml"])).To(Equal([]string{"a.yaml", "b.yaml"}))
	local, err := r.Files()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(local).To(HaveKey("team-b/configmap/c.yaml"))

	// Identical output: no commit.
	res, err = r.Sync(ctx, objs, nil, "apiary: again")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Committed).To(BeFalse())
	g.Expect(commitCount(t, srv)).To(Equal(before + 1))

	// A change: one commit with the given message and the changed file listed.
	res, err = r.Sync(ctx, map[string][]byte{"team-a/configmap/a.yaml": configMap("team-a", "a", "2")}, nil, "apiary: update a")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Changed).To(Equal([]string{"team-a/configmap/a.yaml"}))
	g.Expect(commitCount(t, srv)).To(Equal(before + 2))
	head := remoteHead(t, srv)
	g.Expect(strings.SplitN(head.Message, "\n", 2)[0]).To(Equal("apiary: update a"))
	g.Expect(head.Message).To(ContainSubstring("M team-a/configmap/a.yaml"))
	g.Expect(head.Author.Email).To(Equal("apiary@example.com"))

	// A delete removes the file and its kustomization entries; an emptied directory disappears.
	_, err = r.Sync(ctx, nil, []string{"team-a/configmap/b.yaml", "team-b/configmap/c.yaml"}, "apiary: delete")
	g.Expect(err).NotTo(HaveOccurred())
	files = remoteFiles(t, srv)
	g.Expect(files).NotTo(HaveKey("apiary/team-a/configmap/b.yaml"))
	g.Expect(files).NotTo(HaveKey("apiary/team-b/kustomization.yaml"))
	g.Expect(resourcesOf(t, files["apiary/team-a/configmap/kustomization.yaml"])).To(Equal([]string{"a.yaml"}))
	g.Expect(resourcesOf(t, files["apiary/kustomization.yaml"])).To(Equal([]string{"team-a"}))
}

// pushOutside clones the server repo separately and pushes a commit touching a file outside Path.
func pushOutside(t *testing.T, srv *gittestserver.GitServer, name string) plumbing.Hash {
	t.Helper()
	g := NewWithT(t)
	dir := t.TempDir()
	other, err := git.PlainClone(dir, false, &git.CloneOptions{
		URL: srv.HTTPAddress() + "/" + repoName, ReferenceName: plumbing.NewBranchReferenceName(branch),
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(filepath.Join(dir, name), []byte("other writer\n"), 0o644)).To(Succeed())
	w, err := other.Worktree()
	g.Expect(err).NotTo(HaveOccurred())
	_, err = w.Add(name)
	g.Expect(err).NotTo(HaveOccurred())
	h, err := w.Commit("other writer", &git.CommitOptions{Author: &object.Signature{Name: "o", Email: "o@example.com", When: time.Now()}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(other.Push(&git.PushOptions{})).To(Succeed())
	return h
}

func expectAncestor(t *testing.T, srv *gittestserver.GitServer, ancestor plumbing.Hash) {
	t.Helper()
	g := NewWithT(t)
	head := remoteHead(t, srv)
	bare, err := git.PlainOpen(filepath.Join(srv.Root(), repoName))
	g.Expect(err).NotTo(HaveOccurred())
	anc, err := bare.CommitObject(ancestor)
	g.Expect(err).NotTo(HaveOccurred())
	ok, err := anc.IsAncestor(head)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeTrue(), "the other writer's commit must stay in history (no force push)")
}

func TestSyncKeepsOtherWritersCommits(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv := startServer(t, nil)
	r := openRepo(t, srv, filepath.Join(t.TempDir(), "clone"))
	_, err := r.Sync(ctx, map[string][]byte{"ns/configmap/a.yaml": configMap("ns", "a", "1")}, nil, "first")
	g.Expect(err).NotTo(HaveOccurred())

	// Another writer moves the branch between two Syncs.
	other := pushOutside(t, srv, "other.txt")
	res, err := r.Sync(ctx, map[string][]byte{"ns/configmap/a.yaml": configMap("ns", "a", "2")}, nil, "second")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Committed).To(BeTrue())
	expectAncestor(t, srv, other)
	g.Expect(remoteFiles(t, srv)).To(HaveKeyWithValue("other.txt", "other writer\n"))

	// Another writer moves the branch after Apiary fetched, before it pushes:
	// the push is rejected, retried on the new head, and succeeds.
	pushes := 0
	var raced plumbing.Hash
	r.beforePush = func() {
		pushes++
		if pushes == 1 {
			raced = pushOutside(t, srv, "raced.txt")
		}
	}
	res, err = r.Sync(ctx, map[string][]byte{"ns/configmap/b.yaml": configMap("ns", "b", "1")}, nil, "third")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Committed).To(BeTrue())
	g.Expect(pushes).To(Equal(2))
	expectAncestor(t, srv, raced)
	files := remoteFiles(t, srv)
	g.Expect(files).To(HaveKey("raced.txt"))
	g.Expect(files).To(HaveKey("apiary/ns/configmap/b.yaml"))
	g.Expect(remoteHead(t, srv).Hash.String()).To(Equal(res.Commit))

	// A writer that always wins exhausts the bounded retries: a push-rejected error.
	n := 0
	r.opts.MaxPushRetries = 1
	r.beforePush = func() { n++; pushOutside(t, srv, fmt.Sprintf("race-%d.txt", n)) }
	_, err = r.Sync(ctx, map[string][]byte{"ns/configmap/c.yaml": configMap("ns", "c", "1")}, nil, "fourth")
	g.Expect(IsPushRejected(err)).To(BeTrue(), "%v", err)
	g.Expect(n).To(Equal(2))
}

func TestSyncRefusesTreeKustomizeCannotBuild(t *testing.T) {
	g := NewWithT(t)
	srv := startServer(t, nil)
	r := openRepo(t, srv, filepath.Join(t.TempDir(), "clone"))
	before := remoteHead(t, srv).Hash
	_, err := r.Sync(context.Background(), map[string][]byte{"ns/configmap/bad.yaml": []byte("kind: [unclosed\n")}, nil, "bad")
	g.Expect(err).To(MatchError(ErrInvalidTree))
	g.Expect(remoteHead(t, srv).Hash).To(Equal(before))

	// The broken file is not left behind for the next Sync.
	res, err := r.Sync(context.Background(), map[string][]byte{"ns/configmap/a.yaml": configMap("ns", "a", "1")}, nil, "good")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Committed).To(BeTrue())
	g.Expect(remoteFiles(t, srv)).NotTo(HaveKey("apiary/ns/configmap/bad.yaml"))
}

func TestErrorsAreClassified(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()

	srv := startServer(t, nil)
	r := openRepo(t, srv, filepath.Join(t.TempDir(), "clone"))
	srv.StopHTTP()
	_, err := r.Sync(ctx, map[string][]byte{"ns/configmap/a.yaml": configMap("ns", "a", "1")}, nil, "x")
	g.Expect(IsUnreachable(err)).To(BeTrue(), "%v", err)
	g.Expect(IsAuthFailed(err)).To(BeFalse())

	authed := startServer(t, func(s *gittestserver.GitServer) { s.Auth("apiary", "s3cret") })
	open := func(pw string) (*Repo, error) {
		return Open(ctx, Options{
			URL: authed.HTTPAddress() + "/" + repoName, Branch: branch, Dir: filepath.Join(t.TempDir(), "c"), Path: "apiary",
			Auth: &githttp.BasicAuth{Username: "apiary", Password: pw}, Author: Author{Name: "A", Email: "a@example.com"},
		})
	}
	_, err = open("wrong")
	g.Expect(IsAuthFailed(err)).To(BeTrue(), "%v", err)
	g.Expect(IsUnreachable(err)).To(BeFalse())
	g.Expect(err.Error()).NotTo(ContainSubstring("wrong"))
	ok, err := open("s3cret")
	g.Expect(err).NotTo(HaveOccurred())
	_, err = ok.Sync(ctx, map[string][]byte{"ns/configmap/a.yaml": configMap("ns", "a", "1")}, nil, "x")
	g.Expect(err).NotTo(HaveOccurred())
}

func TestSyncRejectsPathsOutsidePath(t *testing.T) {
	for _, p := range []string{"", "/abs.yaml", "../escape.yaml", "a/../../escape.yaml", ".", ".git/config", "a\\b.yaml", "ns/kustomization.yaml"} {
		t.Run(p, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(validate(map[string][]byte{p: []byte("x")}, nil)).NotTo(Succeed())
			if !strings.HasSuffix(p, "kustomization.yaml") {
				g.Expect(validate(nil, []string{p})).NotTo(Succeed())
			}
		})
	}
	NewWithT(t).Expect(validate(map[string][]byte{"ns/configmap/a.yaml": nil}, []string{"ns/x/b.yaml"})).To(Succeed())
}

func FuzzCleanRel(f *testing.F) {
	for _, s := range []string{"apiary", "a/../b", "../x", "/x", ".git", "a//b/"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		c, err := cleanRel(p)
		if err != nil {
			return
		}
		if filepath.IsAbs(c) || c == ".." || strings.HasPrefix(c, "../") || c == "." {
			t.Fatalf("cleanRel(%q) = %q escapes its root", p, c)
		}
	})
}

func TestObjectPath(t *testing.T) {
	for _, tc := range []struct{ ns, kind, name, want string }{
		{"team-a", "ConfigMap", "a", "team-a/configmap/a.yaml"},
		{"", "ClusterDeployment", "c1", "_cluster/clusterdeployment/c1.yaml"},
	} {
		g := NewWithT(t)
		got := ObjectPath(tc.ns, tc.kind, tc.name)
		g.Expect(got).To(Equal(tc.want))
		g.Expect(validate(map[string][]byte{got: nil}, nil)).To(Succeed())
	}
}
