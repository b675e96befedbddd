package delivery

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
)

// Two sinks on one branch and path stand for two shards: unit "Colony/<ns>/a"
// is shard A's, "Colony/<ns>/b" shard B's.

// TestGitShards_SweepOnlyHeldUnits: a sharded sink whose cache shows
// no owner at all sweeps only the files of the units it holds; another
// shard's files and files that name no unit stay.
func TestGitShards_SweepOnlyHeldUnits(t *testing.T) {
	skipWithoutEnv(t)
	g := NewWithT(t)
	ns := env.NewNamespace(t, "git-shard-sweep")
	srv := startGitServer(t)
	unitA, unitB := "Colony/"+ns+"/a", "Colony/"+ns+"/b"
	a := startGit(t, srv, func(o *GitOptions) { o.MayRemove = func(u string) bool { return u == unitA } })
	b := startGit(t, srv, nil)
	ctxA, ctxB := WithUnit(context.Background(), unitA), WithUnit(context.Background(), unitB)
	applyUnitUntilCommitted(t, ctxA, a, testOwner(ns, "wa"), cms(ns, "a1"), nil)
	applyUnitUntilCommitted(t, ctxB, b, testOwner(ns, "wb"), cms(ns, "b1"), nil)
	applyUnitUntilCommitted(t, context.Background(), b, testOwner(ns, "legacy"), cms(ns, "l1"), nil)
	g.Expect(remoteFile(t, srv, objPath(ns, "ConfigMap", "a1"))).To(ContainSubstring(AnnotationShardUnit + ": " + unitA))
	g.Expect(remoteFile(t, srv, objPath(ns, "ConfigMap", "l1"))).NotTo(ContainSubstring(AnnotationShardUnit))
	g.Expect(a.Refresh(context.Background(), time.Now())).To(Succeed())

	// A's cache shows no owner: only A's unit's file goes.
	g.Expect(a.Sweep("Colony", func(Owner) bool { return false })).To(Equal(1))
	g.Eventually(func() string { return remoteFile(t, srv, objPath(ns, "ConfigMap", "a1")) }).
		WithTimeout(20 * time.Second).Should(BeEmpty())
	g.Expect(remoteFile(t, srv, objPath(ns, "ConfigMap", "b1"))).NotTo(BeEmpty(), "another shard's file")
	g.Expect(remoteFile(t, srv, objPath(ns, "ConfigMap", "l1"))).NotTo(BeEmpty(), "a file of no unit")
	// The generated kustomization.yaml lists what the other shard wrote.
	g.Expect(remoteFile(t, srv, gitPath+"/"+ns+"/configmap/kustomization.yaml")).To(And(ContainSubstring("b1.yaml"), ContainSubstring("l1.yaml")))
}

// TestGitShards_HandOverKeepsEveryFile: shard A writes a unit's files;
// shard B, whose view of the branch is older, takes the unit over. Before
// A releases, its queued change of the unit must be pushed (Settled); B
// reloads (Refresh) and then renders what A last wrote, which costs no
// commit, or removes a file A created after B's view was taken, which
// reaches the branch. Without the reload B would skip both.
func TestGitShards_HandOverKeepsEveryFile(t *testing.T) {
	skipWithoutEnv(t)
	g := NewWithT(t)
	ns := env.NewNamespace(t, "git-shard-handover")
	srv := startGitServer(t)
	unit := "Colony/" + ns + "/u"
	ctx := WithUnit(context.Background(), unit)
	owner := testOwner(ns, "w")
	a := startGit(t, srv, func(o *GitOptions) { o.Window = time.Second })
	applyUnitUntilCommitted(t, ctx, a, owner, cms(ns, "x"), nil)
	b := startGit(t, srv, nil)
	<-b.Opened()
	g.Expect(b.Owners("Colony")).To(HaveLen(1), "B's view holds x")

	// A changes x and adds y; the change is queued, not yet pushed: A may
	// not release the unit yet, and B's view holds the old x only.
	res, err := a.Apply(ctx, owner, []*unstructured.Unstructured{configMap(ns, "x", map[string]string{"k": "v2"}), configMap(ns, "y", nil)}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Pending).To(BeTrue())
	g.Expect(a.Settled(unit)).To(BeFalse(), "a queued change of the unit")
	g.Expect(a.Settled("Colony/"+ns+"/other")).To(BeTrue(), "no change of another unit")
	g.Eventually(func() bool { return a.Settled(unit) }).WithTimeout(20 * time.Second).Should(BeTrue())
	inv := res.Inventory

	// B takes the unit over: it reloads, then renders x as A left it and
	// drops y. Only y's removal is committed.
	before := len(history(t, srv))
	g.Expect(b.Refresh(context.Background(), time.Now())).To(Succeed())
	res = applyUnitUntilCommitted(t, ctx, b, owner, func() []*unstructured.Unstructured {
		return []*unstructured.Unstructured{configMap(ns, "x", map[string]string{"k": "v2"})}
	}, inv)
	g.Expect(remoteFile(t, srv, objPath(ns, "ConfigMap", "x"))).To(ContainSubstring("v2"))
	g.Expect(remoteFile(t, srv, objPath(ns, "ConfigMap", "y"))).To(BeEmpty())
	g.Expect(history(t, srv)).To(HaveLen(before+1), "one commit: y's removal")
	g.Expect(res.Revision).To(Equal(history(t, srv)[0].Hash.String()))

	// Back to the old content of x: B's view is exact, so the write is made.
	applyUnitUntilCommitted(t, ctx, b, owner, cms(ns, "x"), res.Inventory)
	g.Expect(remoteFile(t, srv, objPath(ns, "ConfigMap", "x"))).NotTo(ContainSubstring("v2"))
}

// TestGitShards_RefreshBeforeOpenLoadsLater: a Refresh asked for while the
// clone is not open is honoured by the open.
func TestGitShards_RefreshBeforeOpenLoadsLater(t *testing.T) {
	skipWithoutEnv(t)
	g := NewWithT(t)
	srv := startGitServer(t)
	a := startGit(t, srv, nil)
	<-a.Opened()
	opts := a.opts
	opts.Repo.Dir = t.TempDir()
	b, err := NewGit(opts)
	g.Expect(err).NotTo(HaveOccurred())
	since := time.Now()
	g.Expect(b.Refresh(context.Background(), since)).To(Succeed())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = b.Start(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	<-b.Opened()
	b.mu.Lock()
	defer b.mu.Unlock()
	g.Expect(b.loadedAt).NotTo(BeTemporally("<", since))
}

// applyUnitUntilCommitted is applyUntilCommitted with ctx (the unit).
func applyUnitUntilCommitted(t *testing.T, ctx context.Context, s *Git, owner Owner, objs func() []*unstructured.Unstructured,
	inv *commonv1.ResourceInventory) *Result {
	t.Helper()
	var res *Result
	NewWithT(t).Eventually(func(g Gomega) {
		var err error
		res, err = s.Apply(ctx, owner, objs(), inv)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.Pending).To(BeFalse())
		inv = res.Inventory
	}).WithTimeout(20 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	return res
}
