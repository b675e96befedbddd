package testenv

import (
	"errors"
	"io"
	"testing"

	"github.com/go-git/go-billy/v5/memfs"
	gogit "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"
	. "github.com/onsi/gomega"
)

// cloneFiles clones branch of url and returns its head commit and files.
func cloneFiles(url, branch string, auth transport.AuthMethod) (string, map[string]string, error) {
	repo, err := gogit.Clone(memory.NewStorage(), memfs.New(), &gogit.CloneOptions{
		URL: url, Auth: auth, ReferenceName: plumbing.NewBranchReferenceName(branch), SingleBranch: true,
	})
	if err != nil {
		return "", nil, err
	}
	head, err := repo.Head()
	if err != nil {
		return "", nil, err
	}
	wt, err := repo.Worktree()
	if err != nil {
		return "", nil, err
	}
	infos, err := wt.Filesystem.ReadDir("/")
	if err != nil {
		return "", nil, err
	}
	files := map[string]string{}
	for _, fi := range infos {
		if fi.IsDir() {
			continue
		}
		f, err := wt.Filesystem.Open(fi.Name())
		if err != nil {
			return "", nil, err
		}
		b, err := io.ReadAll(f)
		_ = f.Close()
		if err != nil {
			return "", nil, err
		}
		files[fi.Name()] = string(b)
	}
	return head.Hash().String(), files, nil
}

func TestGitServerCommitAndClone(t *testing.T) {
	g := NewWithT(t)
	srv, err := StartGitServer(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = srv.Stop() })

	g.Expect(srv.InitRepo("fleet.git", "main")).To(Succeed())
	first, err := srv.Commit("fleet.git", "main", "first", map[string][]byte{"a.yaml": []byte("a: 1\n"), "b.yaml": []byte("b: 1\n")})
	g.Expect(err).NotTo(HaveOccurred())
	head, files, err := cloneFiles(srv.RepoURL("fleet.git"), "main", nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(head).To(Equal(first))
	g.Expect(files).To(Equal(map[string]string{"a.yaml": "a: 1\n", "b.yaml": "b: 1\n"}))

	second, err := srv.Commit("fleet.git", "main", "second", map[string][]byte{"a.yaml": nil, "b.yaml": []byte("b: 2\n"), "gone.yaml": nil})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(second).NotTo(Equal(first))
	head, files, err = cloneFiles(srv.RepoURL("fleet.git"), "main", nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(head).To(Equal(second))
	g.Expect(files).To(Equal(map[string]string{"b.yaml": "b: 2\n"}))

	// A new branch starts from the default branch.
	_, err = srv.Commit("fleet.git", "dev", "dev", map[string][]byte{"c.yaml": []byte("c: 1\n")})
	g.Expect(err).NotTo(HaveOccurred())
	_, files, err = cloneFiles(srv.RepoURL("fleet.git"), "dev", nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files).To(Equal(map[string]string{"b.yaml": "b: 2\n", "c.yaml": "c: 1\n"}))
}

func TestGitServerRestartKeepsURLAndRepositories(t *testing.T) {
	g := NewWithT(t)
	srv, err := StartGitServer(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = srv.Stop() })
	g.Expect(srv.InitRepo("r.git", "main")).To(Succeed())
	sha, err := srv.Commit("r.git", "main", "first", map[string][]byte{"f": []byte("1")})
	g.Expect(err).NotTo(HaveOccurred())
	url := srv.RepoURL("r.git")

	g.Expect(srv.Stop()).To(Succeed())
	_, _, err = cloneFiles(url, "main", nil)
	g.Expect(err).To(HaveOccurred(), "the server is down")
	_, err = srv.Commit("r.git", "main", "while down", map[string][]byte{"f": []byte("2")})
	g.Expect(err).To(HaveOccurred(), "the server is down")

	g.Expect(srv.Start()).To(Succeed())
	g.Expect(srv.RepoURL("r.git")).To(Equal(url))
	head, files, err := cloneFiles(url, "main", nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(head).To(Equal(sha))
	g.Expect(files).To(Equal(map[string]string{"f": "1"}))
}

func TestGitServerBasicAuth(t *testing.T) {
	g := NewWithT(t)
	srv, err := StartGitServer(t.TempDir(), WithGitBasicAuth("bee", "s3cret"))
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = srv.Stop() })
	g.Expect(srv.InitRepo("r.git", "main")).To(Succeed())
	_, err = srv.Commit("r.git", "main", "first", map[string][]byte{"f": []byte("1")})
	g.Expect(err).NotTo(HaveOccurred())

	_, _, err = cloneFiles(srv.RepoURL("r.git"), "main", nil)
	g.Expect(errors.Is(err, transport.ErrAuthenticationRequired)).To(BeTrue(), "got %v", err)
	_, _, err = cloneFiles(srv.RepoURL("r.git"), "main", &githttp.BasicAuth{Username: "bee", Password: "wrong"})
	g.Expect(errors.Is(err, transport.ErrAuthenticationRequired)).To(BeTrue(), "got %v", err)
	_, files, err := cloneFiles(srv.RepoURL("r.git"), "main", srv.Auth())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(files).To(HaveKeyWithValue("f", "1"))
}

func TestGitServerRefusesNamesOutsideRoot(t *testing.T) {
	g := NewWithT(t)
	srv, err := StartGitServer(t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = srv.Stop() })
	for _, name := range []string{"", "../escape.git", "/abs.git"} {
		g.Expect(srv.InitRepo(name, "main")).To(MatchError(ContainSubstring("relative path")), name)
	}
	g.Expect(srv.InitRepo("r.git", "bad..branch")).To(MatchError(ContainSubstring("branch")))
}
