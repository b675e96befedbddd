package gitrepo

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/fluxcd/pkg/gittestserver"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	. "github.com/onsi/gomega"
)

// TestRemoveTreeRemovesThePathAndNothingElse removes a folder with its
// kustomization.yaml files in one commit; the folders next to it and the
// commits of others stay, and removing it again commits nothing.
func TestRemoveTreeRemovesThePathAndNothingElse(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv := startServer(t, nil)
	open := func(path string) *Repo {
		r, err := Open(ctx, Options{URL: srv.HTTPAddress() + "/" + repoName, Branch: branch,
			Dir: filepath.Join(t.TempDir(), "clone"), Path: path, Author: Author{Name: "Apiary", Email: "apiary@example.com"}})
		g.Expect(err).NotTo(HaveOccurred())
		return r
	}
	gone, kept := open("routes/team-a/region-1"), open("routes/team-a/region-2")
	for _, r := range []*Repo{gone, kept} {
		_, err := r.Sync(ctx, map[string][]byte{"ws-a/configmap/a.yaml": configMap("ws-a", "a", "1")}, nil, "apiary: routes")
		g.Expect(err).NotTo(HaveOccurred())
	}
	outside := pushOutside(t, srv, "notes.md")
	folders, err := kept.Folders("routes/team-a")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(folders).To(Equal([]string{"region-1", "region-2"}))

	before := commitCount(t, srv)
	res, err := gone.RemoveTree(ctx, "apiary: remove region-1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Committed).To(BeTrue())
	g.Expect(res.Changed).To(ConsistOf("kustomization.yaml", "ws-a/kustomization.yaml", "ws-a/configmap/kustomization.yaml", "ws-a/configmap/a.yaml"))
	g.Expect(commitCount(t, srv)).To(Equal(before + 1))
	expectAncestor(t, srv, outside)
	files := remoteFiles(t, srv)
	for name := range files {
		g.Expect(name).NotTo(HavePrefix("routes/team-a/region-1/"))
	}
	g.Expect(files).To(HaveKey("routes/team-a/region-2/ws-a/configmap/a.yaml"))
	g.Expect(files).To(HaveKey("notes.md"))

	res, err = gone.RemoveTree(ctx, "apiary: remove region-1")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Committed).To(BeFalse(), "an absent folder commits nothing")
	g.Expect(commitCount(t, srv)).To(Equal(before + 1))
	folders, err = gone.Folders("routes/team-a")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(folders).To(Equal([]string{"region-2"}))
}

// TestSyncAsksCredentialsBeforeEveryFetchAndPush rotates the server's
// password and the credentials: the next sync uses the new ones without
// reopening the clone; a credentials error is ErrCredentials.
func TestSyncAsksCredentialsBeforeEveryFetchAndPush(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	srv := startServer(t, func(s *gittestserver.GitServer) { s.Auth("apiary", "first") })
	creds := &fakeCredentials{auth: &githttp.BasicAuth{Username: "apiary", Password: "first"}}
	r, err := Open(ctx, Options{URL: srv.HTTPAddress() + "/" + repoName, Branch: branch, Dir: filepath.Join(t.TempDir(), "clone"),
		Path: "apiary", Author: Author{Name: "Apiary", Email: "apiary@example.com"}, Credentials: creds})
	g.Expect(err).NotTo(HaveOccurred())
	sync := func(v string) error {
		_, err := r.Sync(ctx, map[string][]byte{"ns/configmap/a.yaml": configMap("ns", "a", v)}, nil, "apiary: rotate")
		return err
	}
	g.Expect(sync("1")).To(Succeed())

	srv.Auth("apiary", "second")
	err = sync("2")
	g.Expect(IsAuthFailed(err)).To(BeTrue(), "%v", err)
	creds.auth = &githttp.BasicAuth{Username: "apiary", Password: "second"}
	g.Expect(sync("2")).To(Succeed())

	creds.authErr = errors.New("the Git credentials Secret ns/git does not exist")
	err = sync("3")
	g.Expect(IsCredentials(err)).To(BeTrue(), "%v", err)
	g.Expect(IsAuthFailed(err)).To(BeFalse())
}
