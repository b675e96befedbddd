package gitops_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	"github.com/apiaryhq/apiary/test/standin"
)

// k0rdentFixtures creates what k0rdent and an administrator provide in a
// namespace: a ClusterTemplate, a Credential and a ServiceTemplate.
func k0rdentFixtures(t *testing.T, ns string) {
	t.Helper()
	for _, obj := range []client.Object{
		standin.NewClusterTemplate(ns, "exalsius-remote-cluster-0-1-5", true),
		standin.NewCredential(ns, "remote-cred", true),
		standin.NewServiceTemplate(ns, "tmpl", true, nil),
	} {
		if err := standin.CreateWithStatus(context.Background(), env.Client, obj); err != nil {
			t.Fatalf("creating %s: %v", obj.GetName(), err)
		}
	}
}

// colony returns a Colony with one cluster per name.
func colony(ns, name string, clusters ...string) *infrav1.Colony {
	c := &infrav1.Colony{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	for _, cl := range clusters {
		c.Spec.ColonyClusters = append(c.Spec.ColonyClusters, infrav1.ColonyCluster{
			ClusterName: cl,
			ClusterDeploymentSpec: &runtime.RawExtension{Raw: []byte(
				`{"template":"exalsius-remote-cluster-0-1-5","credential":"remote-cred","config":{"controlPlaneNumber":1}}`)},
		})
	}
	return c
}

type conditioned interface {
	client.Object
	GetConditions() []metav1.Condition
}

// eventuallyTrue waits until obj has every condition True and returns it.
func eventuallyTrue[T conditioned](t *testing.T, obj T, types ...string) T {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		for _, ct := range types {
			c := apimeta.FindStatusCondition(obj.GetConditions(), ct)
			g.Expect(c).NotTo(BeNil(), "condition %s", ct)
			g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s: %s", ct, c.Reason, c.Message)
		}
	}).WithTimeout(timeout).WithPolling(250 * time.Millisecond).Should(Succeed())
	return obj
}

// eventuallyReason waits until obj's condition has the reason.
func eventuallyReason[T conditioned](t *testing.T, obj T, condType, reason string) T {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		c := apimeta.FindStatusCondition(obj.GetConditions(), condType)
		g.Expect(c).NotTo(BeNil(), "condition %s", condType)
		g.Expect(c.Reason).To(Equal(reason), "%s: %s", c.Reason, c.Message)
	}).WithTimeout(timeout).WithPolling(250 * time.Millisecond).Should(Succeed())
	return obj
}

// eventuallyGone waits until obj no longer exists.
func eventuallyGone(t *testing.T, obj client.Object) {
	t.Helper()
	NewWithT(t).Eventually(func() bool {
		err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
		return err != nil && client.IgnoreNotFound(err) == nil
	}).WithTimeout(timeout).WithPolling(250*time.Millisecond).Should(BeTrue(), "%s still exists", obj.GetName())
}

// repository opens the server's bare repository.
func repository(t *testing.T) *git.Repository {
	t.Helper()
	r, err := git.PlainOpen(filepath.Join(gitServer.Root(), repoName))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return r
}

// history returns the branch's commits, newest first.
func history(t *testing.T) []*object.Commit {
	t.Helper()
	g := NewWithT(t)
	r := repository(t)
	ref, err := r.Reference(plumbing.NewBranchReferenceName(branch), true)
	g.Expect(err).NotTo(HaveOccurred())
	iter, err := r.Log(&git.LogOptions{From: ref.Hash()})
	g.Expect(err).NotTo(HaveOccurred())
	var out []*object.Commit
	g.Expect(iter.ForEach(func(c *object.Commit) error { out = append(out, c); return nil })).To(Succeed())
	return out
}

// headFile returns a file at the branch head, "" when absent.
func headFile(t *testing.T, path string) string {
	t.Helper()
	f, err := history(t)[0].File(path)
	if err != nil {
		return ""
	}
	s, err := f.Contents()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return s
}

// objectFile is the path of a delivered object's file in the repository.
func objectFile(ns, kind, name string) string {
	return apiaryPath + "/" + ns + "/" + kind + "/" + name + ".yaml"
}

// fluxApplied returns the revision the Kustomization last applied.
func fluxApplied(g Gomega) string {
	ks := &unstructured.Unstructured{}
	ks.SetAPIVersion("kustomize.toolkit.fluxcd.io/v1")
	ks.SetKind("Kustomization")
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: fluxNS, Name: fluxName}, ks)).To(Succeed())
	rev, _, _ := unstructured.NestedString(ks.Object, "status", "lastAppliedRevision")
	return rev
}

// revisionOf returns the commit in an owner's delivery status.
func revisionOf(d *commonv1.DeliveryStatus) string {
	if d == nil {
		return ""
	}
	return d.Revision
}

// repoDir is the server's bare repository on disk.
func repoDir() string { return filepath.Join(gitServer.Root(), repoName) }
