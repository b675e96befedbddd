package delivery

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/apiaryhq/apiary/internal/delivery/seal"
	"github.com/apiaryhq/apiary/internal/gitrepo"
)

func skipWithoutEnv(t *testing.T) {
	t.Helper()
	if env == nil {
		t.Skip("no API server while fuzzing")
	}
}

func TestGitApply_BatchesOwnersIntoOneCommitAndSkipsUnchangedOutput(t *testing.T) {
	skipWithoutEnv(t)
	g := NewWithT(t)
	ns := env.NewNamespace(t, "git-batch")
	srv := startGitServer(t)
	s := startGit(t, srv, nil)
	a, b := testOwner(ns, "colony-a"), testOwner(ns, "colony-b")
	setA := func() []*unstructured.Unstructured {
		return []*unstructured.Unstructured{configMap(ns, "a1", map[string]string{"k": "1"}), configMap(ns, "a2", map[string]string{"k": "2"})}
	}
	setB := func() []*unstructured.Unstructured {
		return []*unstructured.Unstructured{configMap(ns, "b1", map[string]string{"k": "1"})}
	}
	before := len(history(t, srv))

	// Both owners queue within one window: one commit holds both.
	g.Eventually(func() error { _, err := s.Apply(context.Background(), a, setA(), nil); return err }).
		WithTimeout(20 * time.Second).Should(Succeed())
	resB, err := s.Apply(context.Background(), b, setB(), nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(resB.Pending).To(BeTrue())
	g.Expect(ids(resB)).To(Equal([]string{ns + "_b1__ConfigMap"}))
	resA := applyUntilCommitted(t, s, a, setA, nil)
	resB = applyUntilCommitted(t, s, b, setB, nil)

	commits := history(t, srv)
	g.Expect(commits).To(HaveLen(before + 1))
	g.Expect(resA.Revision).To(Equal(commits[0].Hash.String()))
	g.Expect(resB.Revision).To(Equal(commits[0].Hash.String()))
	g.Expect(commits[0].Message).To(ContainSubstring("Colony " + ns + "/colony-a"))
	g.Expect(commits[0].Message).To(ContainSubstring("Colony " + ns + "/colony-b"))
	cm := remoteFile(t, srv, objPath(ns, "ConfigMap", "a1"))
	g.Expect(cm).To(ContainSubstring(LabelOwnerName + ": colony-a"))
	g.Expect(cm).To(ContainSubstring(AnnotationAppliedDigest))
	g.Expect(remoteFile(t, srv, gitPath+"/"+ns+"/configmap/kustomization.yaml")).To(ContainSubstring("a1.yaml"))

	// The same output again queues nothing and commits nothing.
	again, err := s.Apply(context.Background(), a, setA(), resA.Inventory)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.Pending).To(BeFalse())
	g.Expect(again.Changed).To(BeEmpty())
	g.Expect(again.Revision).To(Equal(resA.Revision))
	g.Consistently(func() int { return len(history(t, srv)) }).WithTimeout(time.Second).Should(Equal(before + 1))

	// One object leaves A's set: its file is removed in the next commit.
	only := func() []*unstructured.Unstructured { return setA()[:1] }
	res := applyUntilCommitted(t, s, a, only, resA.Inventory)
	g.Expect(ids(res)).To(Equal([]string{ns + "_a1__ConfigMap"}))
	g.Expect(remoteFile(t, srv, objPath(ns, "ConfigMap", "a2"))).To(BeEmpty())
	g.Expect(remoteFile(t, srv, objPath(ns, "ConfigMap", "b1"))).NotTo(BeEmpty())
	g.Expect(history(t, srv)).To(HaveLen(before + 2))
}

func TestGitApply_SecretsAreSealedOrRefused(t *testing.T) {
	skipWithoutEnv(t)
	g := NewWithT(t)
	ns := env.NewNamespace(t, "git-secret")
	srv := startGitServer(t)
	secret := func() *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "v1", "kind": "Secret",
			"metadata":   map[string]any{"name": "values", "namespace": ns},
			"stringData": map[string]any{"password": "hunter2-plaintext"},
		}}
	}
	set := func() []*unstructured.Unstructured {
		return []*unstructured.Unstructured{secret(), configMap(ns, "plain", map[string]string{"k": "v"})}
	}

	// Without recipients the Secret is refused; the rest still goes.
	plain := startGit(t, srv, nil)
	owner := testOwner(ns, "ws")
	var res *Result
	g.Eventually(func(g Gomega) {
		var err error
		res, err = plain.Apply(context.Background(), owner, set(), nil)
		g.Expect(seal.IsNoRecipients(err)).To(BeTrue(), "error: %v", err)
		g.Expect(res.Pending).To(BeFalse())
	}).WithTimeout(20 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	g.Expect(remoteFile(t, srv, objPath(ns, "ConfigMap", "plain"))).NotTo(BeEmpty())
	g.Expect(remoteFile(t, srv, objPath(ns, "Secret", "values"))).To(BeEmpty())

	// With an encrypter the Secret is committed sealed, and sealed once.
	sealer := &fakeSealer{}
	sealed := startGit(t, srv, func(o *GitOptions) { o.Encrypter = sealer; o.Repo.Dir = t.TempDir() })
	res = applyUntilCommitted(t, sealed, owner, set, res.Inventory)
	g.Expect(ids(res)).To(ConsistOf(ns+"_values__Secret", ns+"_plain__ConfigMap"))
	g.Expect(remoteFile(t, srv, objPath(ns, "Secret", "values"))).To(ContainSubstring("sealed: "))
	calls, commits := sealer.calls.Load(), len(history(t, srv))
	again, err := sealed.Apply(context.Background(), owner, set(), res.Inventory)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.Pending).To(BeFalse())
	g.Expect(sealer.calls.Load()).To(Equal(calls))
	g.Expect(history(t, srv)).To(HaveLen(commits))
	g.Expect(containsAny(allBlobs(t, srv), "hunter2-plaintext")).To(BeFalse())
}

func TestGitApply_ServerDownThenBackLosesNothing(t *testing.T) {
	skipWithoutEnv(t)
	g := NewWithT(t)
	ns := env.NewNamespace(t, "git-down")
	srv := startGitServer(t)
	s := startGit(t, srv, nil)
	owner := testOwner(ns, "colony")
	version := "1"
	set := func() []*unstructured.Unstructured {
		return []*unstructured.Unstructured{configMap(ns, "cm", map[string]string{"v": version})}
	}
	res := applyUntilCommitted(t, s, owner, set, nil)

	srv.down.Store(true)
	version = "2"
	g.Eventually(func(g Gomega) {
		r, err := s.Apply(context.Background(), owner, set(), res.Inventory)
		g.Expect(r.Pending).To(BeTrue())
		g.Expect(gitrepo.IsUnreachable(err)).To(BeTrue(), "error: %v", err)
	}).WithTimeout(20 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())

	srv.down.Store(false)
	res = applyUntilCommitted(t, s, owner, set, res.Inventory)
	g.Expect(res.Revision).To(Equal(history(t, srv)[0].Hash.String()))
	g.Expect(remoteFile(t, srv, objPath(ns, "ConfigMap", "cm"))).To(ContainSubstring(`v: "2"`))
}

func TestGitApply_RefusesWhileTheRepositoryCannotBeOpened(t *testing.T) {
	skipWithoutEnv(t)
	g := NewWithT(t)
	ns := env.NewNamespace(t, "git-open")
	srv := startGitServer(t)
	srv.down.Store(true)
	s := startGit(t, srv, nil)
	events := s.Subscribe("Colony")
	owner := testOwner(ns, "colony")
	set := func() []*unstructured.Unstructured {
		return []*unstructured.Unstructured{configMap(ns, "cm", map[string]string{"v": "1"})}
	}
	_, err := s.Apply(context.Background(), owner, set(), nil)
	g.Expect(errors.Is(err, ErrNotOpen)).To(BeTrue(), "error: %v", err)

	srv.down.Store(false)
	// Opening notifies the owner it turned away, which then commits.
	g.Eventually(events).WithTimeout(30 * time.Second).Should(Receive(WithTransform(
		func(e event.GenericEvent) string { return e.Object.GetName() }, Equal("colony"))))
	applyUntilCommitted(t, s, owner, set, nil)
}

func TestGitApply_RefusesObjectsHeldByAnotherOwner(t *testing.T) {
	skipWithoutEnv(t)
	g := NewWithT(t)
	ns := env.NewNamespace(t, "git-held")
	srv := startGitServer(t)
	s := startGit(t, srv, nil)
	set := func() []*unstructured.Unstructured {
		return []*unstructured.Unstructured{configMap(ns, "shared", map[string]string{"v": "1"})}
	}
	applyUntilCommitted(t, s, testOwner(ns, "first"), set, nil)
	res, err := s.Apply(context.Background(), testOwner(ns, "second"), set(), nil)
	g.Expect(err).To(MatchError(ContainSubstring("held by Colony " + ns + "/first")))
	g.Expect(res.Inventory.Entries).To(BeEmpty())
	g.Expect(remoteFile(t, srv, objPath(ns, "ConfigMap", "shared"))).To(ContainSubstring(LabelOwnerName + ": first"))
}

func TestGitDelete_RemovesFilesAndWaitsForFluxToPrune(t *testing.T) {
	skipWithoutEnv(t)
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "git-delete")
	srv := startGitServer(t)
	s := startGit(t, srv, nil)
	events := s.Subscribe("Colony")
	owner := testOwner(ns, "colony")
	set := func() []*unstructured.Unstructured {
		return []*unstructured.Unstructured{configMap(ns, "cm", map[string]string{"v": "1"})}
	}
	res := applyUntilCommitted(t, s, owner, set, nil)

	// Flux applied the object, with Apiary's labels from the file.
	applied := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cm", Labels: owner.OwnerLabels()}}
	g.Expect(env.Client.Create(ctx, applied)).To(Succeed())
	waitCached(t, configMap(ns, "cm", nil))

	done, err := s.Delete(ctx, owner, res.Inventory)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(done).To(BeFalse())
	g.Eventually(events).WithTimeout(20 * time.Second).Should(Receive())
	g.Eventually(func() string { return remoteFile(t, srv, objPath(ns, "ConfigMap", "cm")) }).
		WithTimeout(20 * time.Second).Should(BeEmpty())
	done, err = s.Delete(ctx, owner, res.Inventory)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(done).To(BeFalse(), "the object is still in the cluster")
	g.Expect(strings.Contains(history(t, srv)[0].Message, "Colony "+ns+"/colony")).To(BeTrue())

	// Flux prunes it. The sink records its removal commit a moment after
	// the push a remote reader already sees, so the deletion is done once
	// both happened.
	g.Expect(env.Client.Delete(ctx, applied)).To(Succeed())
	waitCached(t, configMap(ns, "cm", nil))
	g.Eventually(func() (bool, error) { return s.Delete(ctx, owner, res.Inventory) }).
		WithTimeout(10 * time.Second).Should(BeTrue())
}

// TestGitApply_RemovalSurvivesACrashBeforeItsCommit: the inventory Apply
// returns while an object's removal is queued still lists the object, so a
// process that records it and dies before the commit finds the removal again
// after a restart; the file leaves the repository. Without that, the
// owner's status would forget the object while Git still holds it.
func TestGitApply_RemovalSurvivesACrashBeforeItsCommit(t *testing.T) {
	skipWithoutEnv(t)
	g := NewWithT(t)
	ns := env.NewNamespace(t, "git-crash")
	srv := startGitServer(t)
	owner := testOwner(ns, "colony")
	both := func() []*unstructured.Unstructured {
		return []*unstructured.Unstructured{configMap(ns, "keep", map[string]string{"k": "1"}), configMap(ns, "gone", map[string]string{"k": "2"})}
	}
	first := startGit(t, srv, nil)
	committed := applyUntilCommitted(t, first, owner, both, nil)
	g.Expect(ids(committed)).To(ConsistOf(ns+"_keep__ConfigMap", ns+"_gone__ConfigMap"))
	commits := len(history(t, srv))

	// A sink whose commit never comes (the process dies in its window).
	dying := startGit(t, srv, func(o *GitOptions) { o.Window = time.Hour; o.Repo.Dir = t.TempDir() })
	one := func() []*unstructured.Unstructured { return both()[:1] }
	var recorded *Result
	g.Eventually(func(g Gomega) {
		var err error
		recorded, err = dying.Apply(context.Background(), owner, one(), committed.Inventory)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(recorded.Pending).To(BeTrue())
	}).WithTimeout(20 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	g.Expect(recorded.Changed).To(Equal([]string{ns + "_gone__ConfigMap"}))
	g.Expect(ids(recorded)).To(ConsistOf(ns+"_keep__ConfigMap", ns+"_gone__ConfigMap"),
		"the removal is not committed: the object stays in the inventory")
	again, err := dying.Apply(context.Background(), owner, one(), recorded.Inventory)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ids(again)).To(ConsistOf(ns+"_keep__ConfigMap", ns+"_gone__ConfigMap"), "and on every Apply until then")
	g.Expect(history(t, srv)).To(HaveLen(commits))

	// The restarted process has only what the status recorded.
	restarted := startGit(t, srv, func(o *GitOptions) { o.Repo.Dir = t.TempDir() })
	res := applyUntilCommitted(t, restarted, owner, one, recorded.Inventory)
	g.Expect(ids(res)).To(Equal([]string{ns + "_keep__ConfigMap"}))
	g.Expect(remoteFile(t, srv, objPath(ns, "ConfigMap", "gone"))).To(BeEmpty())
	g.Expect(remoteFile(t, srv, objPath(ns, "ConfigMap", "keep"))).NotTo(BeEmpty())
	g.Expect(history(t, srv)).To(HaveLen(commits + 1))
}
