package delivery

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/transport"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/apiaryhq/apiary/internal/delivery/sinkset"
	"github.com/apiaryhq/apiary/internal/gitrepo"
)

func cms(ns string, names ...string) func() []*unstructured.Unstructured {
	return func() []*unstructured.Unstructured {
		var out []*unstructured.Unstructured
		for _, n := range names {
			out = append(out, configMap(ns, n, map[string]string{"k": n}))
		}
		return out
	}
}

// TestGitRetire_RemovesTheWholeFolder commits two owners' files, then
// retires the sink: its folder, kustomization.yaml files included, leaves
// the repository in one commit, the README outside it stays, and the sink
// refuses to deliver afterwards.
func TestGitRetire_RemovesTheWholeFolder(t *testing.T) {
	skipWithoutEnv(t)
	g := NewWithT(t)
	ns := env.NewNamespace(t, "git-retire")
	srv := startGitServer(t)
	s := startGit(t, srv, nil)
	a, b := testOwner(ns, "a"), testOwner(ns, "b")
	applyUntilCommitted(t, s, a, cms(ns, "a1"), nil)
	applyUntilCommitted(t, s, b, cms(ns, "b1"), nil)
	g.Expect(s.Owners("Colony")).To(HaveLen(2))
	before := len(history(t, srv))

	rev, err := s.Retire(context.Background())
	g.Expect(err).NotTo(HaveOccurred())
	commits := history(t, srv)
	g.Expect(commits).To(HaveLen(before + 1))
	g.Expect(rev).To(Equal(commits[0].Hash.String()))
	g.Expect(commits[0].Message).To(ContainSubstring("Removed " + gitPath))
	g.Expect(remoteFile(t, srv, gitPath+"/kustomization.yaml")).To(BeEmpty())
	g.Expect(remoteFile(t, srv, objPath(ns, "ConfigMap", "a1"))).To(BeEmpty())
	g.Expect(remoteFile(t, srv, "README.md")).To(Equal("fleet\n"))
	g.Expect(s.Owners("Colony")).To(BeEmpty())

	_, err = s.Apply(context.Background(), a, cms(ns, "a1")(), nil)
	g.Expect(errors.Is(err, ErrRetired)).To(BeTrue(), "%v", err)
	_, err = s.Delete(context.Background(), a, nil)
	g.Expect(errors.Is(err, ErrRetired)).To(BeTrue(), "%v", err)
	_, err = s.Retire(context.Background())
	g.Expect(err).NotTo(HaveOccurred(), "retiring again commits nothing")
	g.Expect(history(t, srv)).To(HaveLen(before + 1))
}

// TestGitRemoveOwner_RemovesAnOwnersFilesWithoutItsInventory removes one
// owner's files found by their labels, as after a restart that lost the
// inventory; the other owner's files stay.
func TestGitRemoveOwner_RemovesAnOwnersFilesWithoutItsInventory(t *testing.T) {
	skipWithoutEnv(t)
	g := NewWithT(t)
	ns := env.NewNamespace(t, "git-remove-owner")
	srv := startGitServer(t)
	s := startGit(t, srv, nil)
	gone, kept := testOwner(ns, "gone"), testOwner(ns, "kept")
	applyUntilCommitted(t, s, gone, cms(ns, "g1", "g2"), nil)
	applyUntilCommitted(t, s, kept, cms(ns, "k1"), nil)

	res, err := s.RemoveOwner(gone)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Pending).To(BeTrue())
	g.Expect(res.Changed).To(HaveLen(2))
	g.Eventually(func(g Gomega) {
		res, err := s.RemoveOwner(gone)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Pending).To(BeFalse())
		g.Expect(res.Revision).To(Equal(history(t, srv)[0].Hash.String()))
	}).WithTimeout(20 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	g.Expect(remoteFile(t, srv, objPath(ns, "ConfigMap", "g1"))).To(BeEmpty())
	g.Expect(remoteFile(t, srv, objPath(ns, "ConfigMap", "k1"))).NotTo(BeEmpty())
	g.Expect(s.Owners("Colony")).To(ConsistOf(HaveField("Name", "kept")))
}

// switchableCredentials fail with an error until told otherwise, counting
// the calls.
type switchableCredentials struct {
	mu    sync.Mutex
	err   error
	calls int
}

func (c *switchableCredentials) Auth(context.Context) (transport.AuthMethod, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	return nil, c.err
}

func (c *switchableCredentials) Signer(context.Context) (git.Signer, error) { return nil, nil }

func (c *switchableCredentials) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.calls
}

func (c *switchableCredentials) set(err error) (calls int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.err = err
	return c.calls
}

// TestGitRetry_CutsTheBackoffShort lets commits fail on credentials until
// the loop waits several seconds between attempts, then fixes them and
// calls Retry, as the Secret watch does: the commit follows at once.
func TestGitRetry_CutsTheBackoffShort(t *testing.T) {
	skipWithoutEnv(t)
	g := NewWithT(t)
	ns := env.NewNamespace(t, "git-retry")
	srv := startGitServer(t)
	creds := &switchableCredentials{}
	s := startGit(t, srv, func(o *GitOptions) { o.Repo.Credentials = creds })
	owner := testOwner(ns, "colony")
	applyUntilCommitted(t, s, owner, cms(ns, "c1"), nil)

	opened := creds.set(errors.New("the Git credentials Secret ns/git does not exist"))
	res, _ := s.Apply(context.Background(), owner, cms(ns, "c1", "c2")(), nil)
	g.Expect(res.Pending).To(BeTrue())
	// Four failed attempts: the fourth is followed by a wait of 4-8s.
	g.Eventually(func() int { return creds.count() - opened }).
		WithTimeout(20 * time.Second).WithPolling(20 * time.Millisecond).Should(BeNumerically(">=", 4))
	_, err := s.Apply(context.Background(), owner, cms(ns, "c1", "c2")(), res.Inventory)
	g.Expect(gitrepo.IsCredentials(err)).To(BeTrue(), "%v", err)
	g.Expect(strings.Count(err.Error(), gitrepo.ErrCredentials.Error())).To(Equal(1))

	creds.set(nil)
	fixed := time.Now()
	s.Retry()
	applyUntilCommitted(t, s, owner, cms(ns, "c1", "c2"), res.Inventory)
	g.Expect(time.Since(fixed)).To(BeNumerically("<", 3*time.Second), "the commit did not wait for the backoff")
	g.Expect(remoteFile(t, srv, objPath(ns, "ConfigMap", "c2"))).NotTo(BeEmpty())
}

// TestGitSetRemove_StopsTheSink removes a sink from its set: its loop
// returns, the set forgets it, and the next Get makes a new one.
func TestGitSetRemove_StopsTheSink(t *testing.T) {
	skipWithoutEnv(t)
	g := NewWithT(t)
	srv := startGitServer(t)
	proto := startGit(t, srv, nil)
	set := &sinkset.Set[string, *Git]{New: func(ctx context.Context, key string) (*Git, error) {
		opts := proto.opts
		opts.Repo.Dir = t.TempDir()
		return NewGit(opts)
	}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = set.Start(ctx) }()
	first, err := set.Get(ctx, "a")
	g.Expect(err).NotTo(HaveOccurred())
	g.Eventually(first.Opened()).WithTimeout(20 * time.Second).Should(BeClosed())
	_, ok := set.Lookup("a")
	g.Expect(ok).To(BeTrue())

	set.Remove("a")
	_, ok = set.Lookup("a")
	g.Expect(ok).To(BeFalse())
	second, err := set.Get(ctx, "a")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(second).NotTo(BeIdenticalTo(first))
	set.Remove("never made") // no-op
}
