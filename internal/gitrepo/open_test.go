package gitrepo

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
)

func TestOpenReusesExistingClone(t *testing.T) {
	g := NewWithT(t)
	srv := startServer(t, nil)
	dir := filepath.Join(t.TempDir(), "clone")
	r := openRepo(t, srv, dir)
	_, err := r.Sync(context.Background(), map[string][]byte{"ns/configmap/a.yaml": configMap("ns", "a", "1")}, nil, "first")
	g.Expect(err).NotTo(HaveOccurred())
	marker := filepath.Join(dir, ".git", "apiary-marker")
	g.Expect(os.WriteFile(marker, []byte("x"), 0o644)).To(Succeed())

	r2 := openRepo(t, srv, dir)
	g.Expect(marker).To(BeAnExistingFile())
	g.Expect(r2.Head()).To(Equal(r.Head()))
	res, err := r2.Sync(context.Background(), map[string][]byte{"ns/configmap/a.yaml": configMap("ns", "a", "2")}, nil, "second")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Committed).To(BeTrue())
	g.Expect(marker).To(BeAnExistingFile())
}

func TestOpenEmptyRemoteCreatesBranch(t *testing.T) {
	g := NewWithT(t)
	srv := startServer(t, nil)
	r, err := Open(context.Background(), Options{
		URL: srv.HTTPAddress() + "/" + repoName, Branch: "apiary-new", Dir: filepath.Join(t.TempDir(), "c"), Path: "apiary",
		Author: Author{Name: "Apiary", Email: "apiary@example.com"},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.Head()).To(BeEmpty())
	res, err := r.Sync(context.Background(), map[string][]byte{"ns/configmap/a.yaml": configMap("ns", "a", "1")}, nil, "init")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Committed).To(BeTrue())
	g.Expect(r.Head()).To(Equal(res.Commit))
}

func TestOpenEmptyRepository(t *testing.T) {
	g := NewWithT(t)
	srv := startServer(t, nil)
	r, err := Open(context.Background(), Options{
		URL: srv.HTTPAddress() + "/empty.git", Branch: branch, Dir: filepath.Join(t.TempDir(), "c"), Path: "apiary",
		Author: Author{Name: "Apiary", Email: "apiary@example.com"},
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.Head()).To(BeEmpty())
	res, err := r.Sync(context.Background(), map[string][]byte{"ns/configmap/a.yaml": configMap("ns", "a", "1")}, nil, "init")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Committed).To(BeTrue())
}

// TestOpenClonesAgainWhenTheCloneCannotBeRead: a process killed while
// go-git wrote into the clone leaves an empty or partial file (seen in the
// crash suite: an empty ref file, after which every Open failed and nothing
// was ever committed again). Open discards such a clone, clones the branch
// again and says why; the remote keeps every commit.
func TestOpenClonesAgainWhenTheCloneCannotBeRead(t *testing.T) {
	for name, damage := range map[string]func(dir string) error{
		"empty remote-tracking ref": func(dir string) error {
			return os.WriteFile(filepath.Join(dir, ".git", "refs", "remotes", "origin", branch), nil, 0o644)
		},
		"truncated index": func(dir string) error {
			return os.WriteFile(filepath.Join(dir, ".git", "index"), []byte("DIRC\x00\x00"), 0o644)
		},
		"garbage config": func(dir string) error {
			return os.WriteFile(filepath.Join(dir, ".git", "config"), []byte("[remote \"origin\"\n\turl = \x00"), 0o644)
		},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			srv := startServer(t, nil)
			dir := filepath.Join(t.TempDir(), "clone")
			r := openRepo(t, srv, dir)
			res, err := r.Sync(context.Background(), map[string][]byte{"ns/configmap/a.yaml": configMap("ns", "a", "1")}, nil, "first")
			g.Expect(err).NotTo(HaveOccurred())
			commits := commitCount(t, srv)
			g.Expect(damage(dir)).To(Succeed())

			again := openRepo(t, srv, dir)
			g.Expect(again.Recloned()).To(HaveOccurred(), "the damaged clone was discarded")
			g.Expect(again.Head()).To(Equal(res.Commit))
			files, err := again.Files()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(files).To(HaveKey("ns/configmap/a.yaml"))
			next, err := again.Sync(context.Background(), map[string][]byte{"ns/configmap/a.yaml": configMap("ns", "a", "2")}, nil, "second")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(next.Committed).To(BeTrue())
			g.Expect(commitCount(t, srv)).To(Equal(commits + 1))
			g.Expect(openRepo(t, srv, dir).Recloned()).NotTo(HaveOccurred(), "a sound clone is reused")
		})
	}
}
