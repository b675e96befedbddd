package shard_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/shard"
)

// onShard picks clusters of shard s of count.
func onShard(s, count int) func(string, []string) bool {
	return func(key string, _ []string) bool { return shard.Desired(key, count) == s }
}

// TestALenderReclaimsFromAnotherShard: tenant a (nominal 0 GPUs) borrows
// tenant b's one GPU for a workspace on a cluster of shard s0; b's own
// workspace, on a cluster of shard s1, which does not cache the borrower,
// takes its share back: s1 finds the borrower on the API server and writes
// its preemption, s0 stops it, and b's workspace runs.
func TestALenderReclaimsFromAnotherShard(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	rec := newRecorder()
	t.Cleanup(func() { noOverlap(t, rec) })
	startReplica(t, rec, "s0", 0, 2)
	startReplica(t, rec, "s1", 1, 2)
	fa, fb := newFleet(t, 1, onShard(0, 2)), newFleet(t, 1, onShard(1, 2))
	quotaOf := func(f *fleet, count int64) string {
		ns := &corev1.Namespace{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: f.ns}, ns)).To(Succeed())
		ns.Labels = map[string]string{"tenant": f.ns}
		g.Expect(env.Client.Update(ctx, ns)).To(Succeed())
		q := &quotav1alpha1.TenantQuota{ObjectMeta: metav1.ObjectMeta{Name: f.ns}, Spec: quotav1alpha1.TenantQuotaSpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tenant": f.ns}},
			Cohort:            "lab-" + fa.ns,
			Hard:              quotav1alpha1.QuotaLimits{GPUs: []quotav1alpha1.GPULimit{{Name: "gpus", ResourceName: "nvidia.com/gpu", Count: count}}},
		}}
		g.Expect(env.Client.Create(ctx, q)).To(Succeed())
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), q) })
		return q.Name
	}
	quotaOf(fa, 0)
	lenderQuota := quotaOf(fb, 1)
	usedOf := func(g Gomega) quotav1alpha1.GPUUsage {
		q := &quotav1alpha1.TenantQuota{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: lenderQuota}, q)).To(Succeed())
		g.Expect(q.Status.Used.GPUs).To(HaveLen(1))
		return q.Status.Used.GPUs[0]
	}

	borrower := fa.workspace(t, "borrower", standalone(fa))
	running(t, borrower)
	g.Eventually(func(g Gomega) {
		g.Expect(usedOf(g)).To(Equal(quotav1alpha1.GPUUsage{Name: "gpus", Count: 1, Lent: 1}))
	}, timeout, 200*time.Millisecond).Should(Succeed())

	lender := fb.workspace(t, "lender", standalone(fb))
	running(t, lender)
	g.Eventually(func(g Gomega) {
		got := &workspacesv1.WorkspaceDeployment{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(borrower), got)).To(Succeed())
		g.Expect(got.Status.Lifecycle).NotTo(BeNil())
		g.Expect(got.Status.Lifecycle.Preemption).NotTo(BeNil(), "message: %s", got.Status.Message)
		g.Expect(got.Status.Lifecycle.Preemption.By).To(Equal(fb.ns + "/" + lender.Name))
		g.Expect(got.Status.Phase).To(Equal(workspacesv1.PhaseWaiting), "it queues again")
		g.Expect(usedOf(g)).To(Equal(quotav1alpha1.GPUUsage{Name: "gpus", Count: 1}), "b has its share back")
	}, timeout, 200*time.Millisecond).Should(Succeed())
}

// standalone is the fleet's ClusterDeployment that is not its Colony's
// (fleet-a): the one whose shard the test picked.
func standalone(f *fleet) string {
	for _, c := range f.clusters() {
		if c != "fleet-a" {
			return c
		}
	}
	return ""
}
