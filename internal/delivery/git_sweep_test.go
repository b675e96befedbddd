package delivery

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestGitSweep_RemovesTheFilesOfOwnersThatAreGone commits the files of three
// owners, two of one kind and one of another, then sweeps the kind with one
// of its owners gone: only that owner's files leave the repository, in one
// commit, and the owner of the other kind is never asked about.
func TestGitSweep_RemovesTheFilesOfOwnersThatAreGone(t *testing.T) {
	skipWithoutEnv(t)
	g := NewWithT(t)
	ns := env.NewNamespace(t, "git-sweep")
	srv := startGitServer(t)
	s := startGit(t, srv, nil)
	live, gone := testOwner(ns, "live"), testOwner(ns, "gone")
	other := Owner{Kind: "WorkspaceRoutes", Namespace: ns, Name: "gone"}
	applyUntilCommitted(t, s, live, cms(ns, "l1"), nil)
	applyUntilCommitted(t, s, gone, cms(ns, "g1", "g2"), nil)
	applyUntilCommitted(t, s, other, cms(ns, "o1"), nil)
	before := len(history(t, srv))

	var asked []string
	n := s.Sweep("Colony", func(o Owner) bool {
		asked = append(asked, o.Kind+" "+o.Name)
		return o.Name != "gone"
	})
	g.Expect(n).To(Equal(2))
	g.Expect(asked).To(ConsistOf("Colony live", "Colony gone"), "each owner of the kind is asked once")
	g.Eventually(func() string { return remoteFile(t, srv, objPath(ns, "ConfigMap", "g1")) }).
		WithTimeout(20 * time.Second).Should(BeEmpty())
	g.Expect(remoteFile(t, srv, objPath(ns, "ConfigMap", "g2"))).To(BeEmpty())
	g.Expect(remoteFile(t, srv, objPath(ns, "ConfigMap", "l1"))).NotTo(BeEmpty())
	g.Expect(remoteFile(t, srv, objPath(ns, "ConfigMap", "o1"))).NotTo(BeEmpty())
	g.Expect(history(t, srv)).To(HaveLen(before + 1))

	// Nothing is left to sweep: no commit follows.
	g.Expect(s.Sweep("Colony", func(o Owner) bool { return o.Name != "gone" })).To(Equal(0))
	g.Consistently(func() int { return len(history(t, srv)) }).WithTimeout(time.Second).Should(Equal(before + 1))
}

// TestGitSweep_BeforeOpenRunsOnceOpen asks for a sweep before the clone is
// open: it is kept and done as soon as the sink opens.
func TestGitSweep_BeforeOpenRunsOnceOpen(t *testing.T) {
	skipWithoutEnv(t)
	g := NewWithT(t)
	ns := env.NewNamespace(t, "git-sweep-open")
	srv := startGitServer(t)
	first := startGit(t, srv, nil)
	gone := testOwner(ns, "gone")
	applyUntilCommitted(t, first, gone, func() []*unstructured.Unstructured { return []*unstructured.Unstructured{configMap(ns, "g1", nil)} }, nil)

	// A second sink on the same repository, swept before it starts.
	opts := first.opts
	opts.Repo.Dir = t.TempDir()
	second, err := NewGit(opts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(second.Sweep("Colony", func(Owner) bool { return false })).To(Equal(0))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = second.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	g.Eventually(func() string { return remoteFile(t, srv, objPath(ns, "ConfigMap", "g1")) }).
		WithTimeout(20 * time.Second).Should(BeEmpty())
}
