package takeover_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/delivery"
	"github.com/apiaryhq/apiary/internal/shard"
	"github.com/apiaryhq/apiary/internal/uninstall"
	"github.com/apiaryhq/apiary/test/world"
	"github.com/apiaryhq/apiary/test/world/builder"
)

// TestUninstallLeavesNothingTheOperatorCannotRelease: once Apiary is
// stopped, a WorkspaceClass it protected with its in-use finalizer (a name
// the exalsius operator does not know) cannot be deleted, until `apiary
// uninstall` removes that finalizer and Apiary's annotations. It refuses
// while Apiary's Lease is held. What is left carries only finalizers the
// exalsius operator or k0rdent release: the operator's own steps (delete
// the ServiceSet, then remove its finalizer) then delete the workspace.
func TestUninstallLeavesNothingTheOperatorCannotRelease(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "reverse")
	builder.ReadyCluster(t, env.Client, ns, "c1")
	class := builder.NewClass(ns, "reverse", builder.Named("reverse-"+ns))
	g.Expect(env.Client.Create(ctx, class)).To(Succeed())
	w := &workspacesv1.WorkspaceDeployment{ObjectMeta: metav1.ObjectMeta{Name: unique(ns, "rev"), Namespace: ns},
		Spec: workspacesv1.WorkspaceDeploymentSpec{WorkspaceClassRef: class.Name,
			ClusterDeploymentRef: workspacesv1.ClusterDeploymentReference{Name: "c1", Namespace: ns}}}
	g.Expect(env.Client.Create(ctx, w)).To(Succeed())
	m := apiary(t)
	world.EventuallyPhase(t, env.Client, w, workspacesv1.PhaseRunning)
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(class), class)).To(Succeed())
		g.Expect(class.Finalizers).To(ContainElement(workspacesv1.WorkspaceClassFinalizer))
	}, timeout, poll).Should(Succeed())
	m.Stop()

	// Without Apiary the class is stuck in deletion.
	g.Expect(env.Client.Delete(ctx, class)).To(Succeed())
	g.Consistently(func() error {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(class), &workspacesv1.WorkspaceClass{})
	}, 2*time.Second, poll).Should(Succeed(), "nobody releases Apiary's finalizer")

	// A held Lease means Apiary runs: nothing is touched.
	lease := heldLease(t, ns)
	opts := uninstall.Options{Lease: lease}
	_, err := uninstall.Run(ctx, env.Client, opts)
	g.Expect(err).To(MatchError(uninstall.ErrRunning))
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(class), class)).To(Succeed())
	g.Expect(class.Finalizers).To(ContainElement(workspacesv1.WorkspaceClassFinalizer))

	// The command line, in a dry run, says what it would do and writes nothing.
	var out, errOut bytes.Buffer
	code := uninstall.Main([]string{"--kubeconfig", kubeconfigFile(t), "--leader-election-namespace", ns, "--force", "--dry-run"}, &out, &errOut)
	g.Expect(code).To(Equal(0), errOut.String())
	g.Expect(out.String()).To(SatisfyAll(ContainSubstring("WorkspaceClass "+class.Name+": removing finalizer "+workspacesv1.WorkspaceClassFinalizer),
		ContainSubstring("ServiceSet "+ns+"/wsd-c1-"+w.Name+": removing Apiary's annotations"), ContainSubstring("would remove")))
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(class), class)).To(Succeed())

	// Once the Lease expires (Apiary scaled down), it releases them.
	expire(t, lease)
	rep, err := uninstall.Run(ctx, env.Client, opts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rep.Finalizers).To(BeNumerically(">=", 1))
	g.Expect(rep.Annotated).To(BeNumerically(">=", 1))
	g.Eventually(func() bool {
		return apierrorsIsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(class), &workspacesv1.WorkspaceClass{}))
	}, timeout, poll).Should(BeTrue(), "the class is deleted")
	ss := &k0rdentv1beta1.ServiceSet{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "wsd-c1-" + w.Name}, ss)).To(Succeed())
	g.Expect(ss.Annotations).NotTo(HaveKey(delivery.AnnotationAppliedDigest))
	again, err := uninstall.Run(ctx, env.Client, opts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(uninstall.Report{}), "a second run has nothing left to do")

	// Only names the exalsius operator and k0rdent release are left.
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(w), w)).To(Succeed())
	g.Expect(w.Finalizers).To(ConsistOf(workspacesv1.WorkspaceDeploymentFinalizer))
	g.Expect(ss.Finalizers).To(HaveEach(HavePrefix("k0rdent.mirantis.com/")))
	// The operator's deletion: the ServiceSet, awaited, then its finalizer.
	g.Expect(env.Client.Delete(ctx, w)).To(Succeed())
	g.Expect(operator().Delete(ctx, ss)).To(Succeed())
	g.Eventually(func() bool {
		return apierrorsIsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(ss), &k0rdentv1beta1.ServiceSet{}))
	}, timeout, poll).Should(BeTrue(), "k0rdent releases the ServiceSet")
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(w), w)).To(Succeed())
	controllerutil.RemoveFinalizer(w, workspacesv1.WorkspaceDeploymentFinalizer)
	g.Expect(operator().Update(ctx, w)).To(Succeed())
	g.Eventually(func() bool {
		return apierrorsIsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(w), &workspacesv1.WorkspaceDeployment{}))
	}, timeout, poll).Should(BeTrue())
}

// TestUninstallChecksTheShardsLeases: sharded replicas hold the Leases
// apiary-shard-<index>, not the main one; `apiary uninstall` refuses while
// any of them is held, and ignores Leases of other names.
func TestUninstallChecksTheShardsLeases(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "shardlease")
	opts := uninstall.Options{Lease: types.NamespacedName{Namespace: ns, Name: "apiary.infra.exalsius.ai"}}
	expire(t, heldLeaseNamed(t, ns, opts.Lease.Name))
	heldLeaseNamed(t, ns, "other-controller")
	heldLeaseNamed(t, ns, shard.LeasePrefix+"x")
	_, err := uninstall.Run(ctx, env.Client, opts)
	g.Expect(err).NotTo(HaveOccurred(), "the main Lease lapsed; other names are not Apiary's")

	held := heldLeaseNamed(t, ns, shard.LeaseName(1))
	_, err = uninstall.Run(ctx, env.Client, opts)
	g.Expect(err).To(MatchError(uninstall.ErrRunning))
	g.Expect(err.Error()).To(ContainSubstring(held.String()))
	var out, errOut bytes.Buffer
	code := uninstall.Main([]string{"--kubeconfig", kubeconfigFile(t), "--leader-election-namespace", ns, "--dry-run"}, &out, &errOut)
	g.Expect(code).To(Equal(1))
	g.Expect(errOut.String()).To(ContainSubstring(shard.LeaseName(1)))
	_, err = uninstall.Run(ctx, env.Client, uninstall.Options{Lease: types.NamespacedName{Namespace: ns}})
	g.Expect(err).To(MatchError(uninstall.ErrRunning), "without a main Lease name the shards' are still checked")

	expire(t, held)
	_, err = uninstall.Run(ctx, env.Client, opts)
	g.Expect(err).NotTo(HaveOccurred())
}

// heldLease creates Apiary's leader-election Lease in ns, just renewed.
func heldLease(t *testing.T, ns string) types.NamespacedName {
	t.Helper()
	return heldLeaseNamed(t, ns, "apiary.infra.exalsius.ai")
}

// heldLeaseNamed creates the Lease name in ns, just renewed.
func heldLeaseNamed(t *testing.T, ns, name string) types.NamespacedName {
	t.Helper()
	holder, d := "apiary-7d9f_0a1b", int32(15)
	now := metav1.NewMicroTime(time.Now())
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &d, RenewTime: &now, AcquireTime: &now}}
	if err := env.Client.Create(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	return client.ObjectKeyFromObject(l)
}

// expire makes a Lease's last renewal older than its duration.
func expire(t *testing.T, key types.NamespacedName) {
	t.Helper()
	l := &coordinationv1.Lease{}
	if err := env.Client.Get(context.Background(), key, l); err != nil {
		t.Fatal(err)
	}
	old := metav1.NewMicroTime(time.Now().Add(-time.Minute))
	l.Spec.RenewTime = &old
	if err := env.Client.Update(context.Background(), l); err != nil {
		t.Fatal(err)
	}
}

func kubeconfigFile(t *testing.T) string {
	t.Helper()
	b, err := env.Kubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
