package delivery

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fluxcd/pkg/gittestserver"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-logr/logr"
	"github.com/go-logr/logr/testr"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	"github.com/apiaryhq/apiary/internal/gitrepo"
)

const (
	gitBranch = "main"
	gitRepo   = "fleet.git"
	gitPath   = "clusters/mgmt/apiary"
)

// gitServer is a loopback Git server that a test can take down and bring
// back without changing its address.
type gitServer struct {
	*gittestserver.GitServer
	down atomic.Bool
}

// url is the repository's address.
func (s *gitServer) url() string { return s.HTTPAddress() + "/" + gitRepo }

// startGitServer starts a server holding gitRepo with one commit.
func startGitServer(t testing.TB) *gitServer {
	t.Helper()
	g := NewWithT(t)
	srv, err := gittestserver.NewTempGitServer()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = os.RemoveAll(srv.Root()) })
	s := &gitServer{GitServer: srv}
	srv.AddHTTPMiddlewares(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if s.down.Load() {
				// Drop the connection, as a server that went away does.
				if hj, ok := w.(http.Hijacker); ok {
					if c, _, err := hj.Hijack(); err == nil {
						_ = c.Close()
						return
					}
				}
				w.WriteHeader(http.StatusServiceUnavailable)
				return
			}
			next.ServeHTTP(w, r)
		})
	})
	fixture := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(fixture, "README.md"), []byte("fleet\n"), 0o644)).To(Succeed())
	g.Expect(srv.InitRepo(fixture, gitBranch, gitRepo)).To(Succeed())
	g.Expect(srv.StartHTTP()).To(Succeed())
	t.Cleanup(srv.StopHTTP)
	return s
}

// fakeSealer stands in for SOPS in the sink's tests: it keeps metadata and
// replaces the data with an encoding of the whole manifest, so a test can
// tell sealed files and find no plaintext.
type fakeSealer struct{ calls atomic.Int32 }

func (f *fakeSealer) Encrypt(manifest []byte) ([]byte, error) {
	f.calls.Add(1)
	return f.seal(manifest)
}

func (f *fakeSealer) seal(manifest []byte) ([]byte, error) {
	m := map[string]any{}
	if err := yaml.Unmarshal(manifest, &m); err != nil {
		return nil, err
	}
	delete(m, "stringData")
	m["data"] = map[string]any{"sealed": base64.StdEncoding.EncodeToString([]byte(base64.StdEncoding.EncodeToString(manifest)))}
	return yaml.Marshal(m)
}

func (f *fakeSealer) Unchanged(committed, manifest []byte) bool {
	want, err := f.seal(manifest)
	return err == nil && bytes.Equal(committed, want)
}

// startGit starts a Git sink on srv with a short window and runs its loop
// until the test ends.
func startGit(t testing.TB, srv *gitServer, mutate func(*GitOptions)) *Git {
	t.Helper()
	opts := GitOptions{
		Repo: gitrepo.Options{
			URL: srv.url(), Branch: gitBranch, Dir: t.TempDir(), Path: gitPath,
			Author: gitrepo.Author{Name: "Apiary", Email: "apiary@example.com"},
		},
		Mapper: mgr.GetRESTMapper(), Reader: mgr.GetClient(), Scheme: env.Scheme,
		Window: 200 * time.Millisecond, Logger: testLogger(t),
	}
	if mutate != nil {
		mutate(&opts)
	}
	s, err := NewGit(opts)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return s
}

// applyUntilCommitted calls Apply until the owner's changes are committed
// and returns the final result.
func applyUntilCommitted(t *testing.T, s *Git, owner Owner, objs func() []*unstructured.Unstructured, prev *commonv1.ResourceInventory) *Result {
	t.Helper()
	var res *Result
	NewWithT(t).Eventually(func(g Gomega) {
		var err error
		res, err = s.Apply(context.Background(), owner, objs(), prev)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Pending).To(BeFalse())
		prev = res.Inventory
	}).WithTimeout(20 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	return res
}

// history returns the commits on the server's branch, newest first.
func history(t testing.TB, srv *gitServer) []*object.Commit {
	t.Helper()
	g := NewWithT(t)
	r, err := git.PlainOpen(filepath.Join(srv.Root(), gitRepo))
	g.Expect(err).NotTo(HaveOccurred())
	ref, err := r.Reference(plumbing.NewBranchReferenceName(gitBranch), true)
	g.Expect(err).NotTo(HaveOccurred())
	iter, err := r.Log(&git.LogOptions{From: ref.Hash()})
	g.Expect(err).NotTo(HaveOccurred())
	var out []*object.Commit
	g.Expect(iter.ForEach(func(c *object.Commit) error { out = append(out, c); return nil })).To(Succeed())
	return out
}

// remoteFile returns a file of the branch head on the server, "" when absent.
func remoteFile(t *testing.T, srv *gitServer, path string) string {
	t.Helper()
	c := history(t, srv)[0]
	f, err := c.File(path)
	if err != nil {
		return ""
	}
	s, err := f.Contents()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return s
}

// allBlobs returns the content of every blob reachable from the branch.
func allBlobs(t *testing.T, srv *gitServer) []string {
	t.Helper()
	var out []string
	for _, c := range history(t, srv) {
		tree, err := c.Tree()
		NewWithT(t).Expect(err).NotTo(HaveOccurred())
		_ = tree.Files().ForEach(func(f *object.File) error {
			s, err := f.Contents()
			if err == nil {
				out = append(out, s)
			}
			return nil
		})
	}
	return out
}

func objPath(ns, kind, name string) string {
	return gitPath + "/" + gitrepo.ObjectPath(ns, kind, name)
}

func containsAny(blobs []string, s string) bool {
	for _, b := range blobs {
		if strings.Contains(b, s) {
			return true
		}
	}
	return false
}

// testLogger logs through t for tests and nowhere for benchmarks.
func testLogger(t testing.TB) logr.Logger {
	if tt, ok := t.(*testing.T); ok {
		return testr.New(tt)
	}
	return logr.Discard()
}
