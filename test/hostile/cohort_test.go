package hostile_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/gpu"
	"github.com/apiaryhq/apiary/test/standin"
	"github.com/apiaryhq/apiary/test/world"
)

// Test18ABorrowerGivesBackWhatItBorrowed: the owner's TenantQuota (2
// GPUs) and the intruder's (1 GPU, borrowing at most 1) form a cohort; each
// tenant runs on its own cluster (the manager as its own process). The
// intruder borrows the owner's idle GPU for a workspace of 2 and can take
// no more (its third GPU waits); the owner's workspace of 2 takes its
// nominal share back: the intruder's borrower is stopped (Preempted, named,
// its volume kept) and queues again, the owner's runs, and the owner's
// quota ends lending nothing.
func Test18ABorrowerGivesBackWhatItBorrowed(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	owner, intruder := tenant(t, "cohort-own"), tenant(t, "cohort-int")
	model, node := "cohort-"+owner, "node-cohort-"+owner
	g.Expect(standin.AddGPUNode(ctx, child.Client, node, map[string]string{gpu.ModelLabel: model}, gpu.ResourceNVIDIA, 4)).To(Succeed())
	t.Cleanup(func() {
		_ = child.Client.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}})
	})
	quotaOf := func(ns string, limit quotav1alpha1.GPULimit) string {
		labelNamespace(t, ns, map[string]string{"tenant": ns})
		limit.Name, limit.GPUModel = "gpus", model
		create(t, &quotav1alpha1.TenantQuota{ObjectMeta: metav1.ObjectMeta{Name: "q-" + ns}, Spec: quotav1alpha1.TenantQuotaSpec{
			NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tenant": ns}},
			Cohort:            "lab-" + owner,
			Hard:              quotav1alpha1.QuotaLimits{GPUs: []quotav1alpha1.GPULimit{limit}},
		}})
		return "q-" + ns
	}
	ownerQuota := quotaOf(owner, quotav1alpha1.GPULimit{Count: 2})
	intruderQuota := quotaOf(intruder, quotav1alpha1.GPULimit{Count: 1, BorrowingLimit: ptr.To[int64](1)})
	usedOf := func(g Gomega, name string) quotav1alpha1.GPUUsage {
		q := &quotav1alpha1.TenantQuota{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, q)).To(Succeed())
		g.Expect(q.Status.Used.GPUs).To(HaveLen(1))
		return q.Status.Used.GPUs[0]
	}
	withGPUs := func(ns, name, cls string, gpus int32) *workspacesv1.WorkspaceDeployment {
		w := workspace(ns, name+"-"+owner[len(owner)-5:], cls, "c1")
		w.Spec.Resources = &workspacesv1.WorkspaceResourceSpec{PerReplica: &workspacesv1.PerReplicaResources{
			GPUCount: ptr.To(gpus), GPUType: ptr.To(model)}}
		return w
	}
	intruderClass := hubClass(t, intruder, nil)
	borrower := withGPUs(intruder, "borrower", intruderClass, 2)
	create(t, borrower)
	world.EventuallyPhase(t, env.Client, borrower, workspacesv1.PhaseRunning)
	claim := &corev1.PersistentVolumeClaim{}
	claimKey := client.ObjectKey{Namespace: "ws-" + borrower.Name, Name: "wsd-c1-" + borrower.Name}
	g.Eventually(func(g Gomega) {
		g.Expect(child.Client.Get(ctx, claimKey, claim)).To(Succeed())
		g.Expect(usedOf(g, intruderQuota)).To(Equal(quotav1alpha1.GPUUsage{Name: "gpus", Count: 2, Borrowed: 1}))
		g.Expect(usedOf(g, ownerQuota)).To(Equal(quotav1alpha1.GPUUsage{Name: "gpus", Count: 1, Lent: 1}))
	}, timeout, 200*time.Millisecond).Should(Succeed())

	more := withGPUs(intruder, "more", intruderClass, 1)
	create(t, more)
	w := world.EventuallyPhase(t, env.Client, more, workspacesv1.PhaseWaiting)
	g.Expect(condition(w, workspacesv1.QuotaReservedCondition).Reason).To(Equal(workspacesv1.QuotaExceededReason), w.Status.Message)

	own := withGPUs(owner, "own", class(t, owner, nil), 2)
	create(t, own)
	world.EventuallyPhase(t, env.Client, own, workspacesv1.PhaseRunning)
	g.Eventually(func(g Gomega) {
		w := get(g, borrower)
		g.Expect(w.Status.Lifecycle).NotTo(BeNil())
		g.Expect(w.Status.Lifecycle.Preemption).NotTo(BeNil(), "message: %s", w.Status.Message)
		g.Expect(w.Status.Lifecycle.Preemption.By).To(Equal(owner + "/" + own.Name))
		g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseWaiting), "it queues again")
		expectScaledAway(g, w)
		kept := &corev1.PersistentVolumeClaim{}
		g.Expect(child.Client.Get(ctx, claimKey, kept)).To(Succeed())
		g.Expect(kept.UID).To(Equal(claim.UID), "the volume claim is kept")
		g.Expect(usedOf(g, ownerQuota)).To(Equal(quotav1alpha1.GPUUsage{Name: "gpus", Count: 2}), "the owner has its share back")
	}, timeout, 500*time.Millisecond).Should(Succeed())
	// The intruder's own GPU now serves its waiting workspace of 1.
	world.EventuallyPhase(t, env.Client, more, workspacesv1.PhaseRunning)
	g.Consistently(func(g Gomega) {
		g.Expect(get(g, borrower).Status.Phase).To(Equal(workspacesv1.PhaseWaiting))
		g.Expect(usedOf(g, ownerQuota).Lent).To(BeZero())
	}, 2*time.Second, 200*time.Millisecond).Should(Succeed(), "nothing left to borrow: the owner uses its share")
}
