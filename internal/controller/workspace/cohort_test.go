package workspace_test

import (
	"context"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/controllertest"
	"github.com/apiaryhq/apiary/test/standin"
)

// cohortQuota creates a TenantQuota of one namespace in a cohort, on GPUs
// of a model.
func cohortQuota(t *testing.T, ns, cohort, model string, limit quotav1alpha1.GPULimit) *quotav1alpha1.TenantQuota {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	nsObj := &corev1.Namespace{}
	g.Expect(controllertest.Env.Client.Get(ctx, client.ObjectKey{Name: ns}, nsObj)).To(Succeed())
	controllertest.UpdateSpec(g, nsObj, func(n *corev1.Namespace) { n.Labels["tenant"] = ns })
	limit.Name, limit.ResourceName, limit.GPUModel = "gpus", "nvidia.com/gpu", model
	q := &quotav1alpha1.TenantQuota{ObjectMeta: metav1.ObjectMeta{Name: ns}, Spec: quotav1alpha1.TenantQuotaSpec{
		NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tenant": ns}},
		Cohort:            cohort,
		Hard:              quotav1alpha1.QuotaLimits{GPUs: []quotav1alpha1.GPULimit{limit}},
	}}
	g.Expect(controllertest.Env.Client.Create(ctx, q)).To(Succeed())
	t.Cleanup(func() { _ = controllertest.Env.Client.Delete(context.Background(), q) })
	return q
}

// cohortPair is two tenants, a and b, in one cohort on a's cluster c1 of
// 8 GPUs of one model: their quotas and a workspace of n GPUs of that model.
type cohortPair struct {
	a, b, model string
	qa, qb      *quotav1alpha1.TenantQuota
	class       string
}

func newCohortPair(t *testing.T, prefix string, la, lb quotav1alpha1.GPULimit) *cohortPair {
	t.Helper()
	p := &cohortPair{a: controllertest.Env.NewNamespace(t, prefix+"-a"), b: controllertest.Env.NewNamespace(t, prefix+"-b")}
	controllertest.ReadyCluster(t, p.a, "c1")
	p.class = controllertest.HubClass(t, p.a, "hub", nil).Name
	p.model = "GPU-" + p.a
	NewWithT(t).Expect(standin.AddGPUNode(context.Background(), controllertest.ChildClient, p.a+"-gpu",
		map[string]string{"exalsius.ai/gpu-model": p.model}, "nvidia.com/gpu", 8)).To(Succeed())
	p.qa = cohortQuota(t, p.a, "lab-"+p.a, p.model, la)
	p.qb = cohortQuota(t, p.b, "lab-"+p.a, p.model, lb)
	return p
}

func (p *cohortPair) workspace(ns, name string, gpus int32) *workspacesv1.WorkspaceDeployment {
	w := gpuWorkspace(ns, uniq(ns, name), p.class, "c1", p.model, gpus)
	w.Spec.ClusterDeploymentRef.Namespace = p.a
	return w
}

// TestCohortBorrowsWithinLimitsAndReclaims: tenants a (2 GPUs, borrowing
// at most 2) and b (4 GPUs, lending at most 2) form a cohort on one
// cluster of 8 GPUs. a's workspace of 4 runs on 2 GPUs of its own and 2
// borrowed from b, recorded on both quotas and on its status; a's next
// GPU waits (its borrowing limit and b's lending limit are reached). b's
// workspace of 4 needs its nominal share back: it waits, Reclaiming, until
// the borrower has run its minimum runtime, then stops it (Preempted,
// named in a Warning event, its volume kept) and runs; the borrower's loan
// ends, and it queues again. a's waiting GPU then fits a's own share.
func TestCohortBorrowsWithinLimitsAndReclaims(t *testing.T) {
	g := NewWithT(t)
	p := newCohortPair(t, "coh", quotav1alpha1.GPULimit{Count: 2, BorrowingLimit: ptr.To[int64](2)},
		quotav1alpha1.GPULimit{Count: 4, LendingLimit: ptr.To[int64](2)})
	a, b, qa, qb, workspace := p.a, p.b, p.qa, p.qb, p.workspace
	guarded := preemptingClass(t, a, "guarded", 0, workspacesv1.PreemptNever, 6*time.Second)

	borrower := workspace(a, "big", 4)
	borrower.Spec.PriorityClassName = guarded
	keyBig := controllertest.CreateWorkspace(t, borrower)
	running := controllertest.EventuallyRunning(t, keyBig)
	var before controllertest.HubRelease
	g.Eventually(func(g Gomega) { before = controllertest.ReadHubRelease(g, running) }, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(getTenantQuota(g, qa.Name).Status.Used.GPUs).To(Equal([]quotav1alpha1.GPUUsage{{Name: "gpus", Count: 4, Borrowed: 2}}))
		g.Expect(getTenantQuota(g, qb.Name).Status.Used.GPUs).To(Equal([]quotav1alpha1.GPUUsage{{Name: "gpus", Count: 2, Lent: 2}}))
		g.Expect(getTenantQuota(g, qb.Name).Status.Used.Workspaces).To(BeZero(), "a loan takes no place in the lender's count")
		g.Expect(getTenantQuota(g, qa.Name).Status.Summary).To(Equal("gpus/gpus: 4/2 (2 borrowed), workspaces: 1"))
		w := controllertest.GetWorkspace(g, keyBig)
		var lent, borrowed []commonv1.LimitGPUs
		for _, r := range w.Status.QuotaCharges {
			lent, borrowed = append(lent, r.Lent...), append(borrowed, r.Borrowed...)
		}
		g.Expect(borrowed).To(Equal([]commonv1.LimitGPUs{{Limit: "gpus", Count: 2}}))
		g.Expect(lent).To(Equal([]commonv1.LimitGPUs{{Limit: "gpus", Count: 2}}))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())

	keySmall := controllertest.CreateWorkspace(t, workspace(a, "small", 1))
	w := controllertest.EventuallyPhase(t, keySmall, workspacesv1.PhaseWaiting)
	g.Expect(controllertest.Condition(w, workspacesv1.QuotaReservedCondition).Reason).To(Equal(workspacesv1.QuotaExceededReason))

	keyLender := controllertest.CreateWorkspace(t, workspace(b, "own", 4))
	g.Eventually(func(g Gomega) {
		w := controllertest.GetWorkspace(g, keyLender)
		c := controllertest.Condition(w, workspacesv1.QuotaReservedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(workspacesv1.ReclaimingReason))
		g.Expect(c.Message).To(ContainSubstring(`the GPUs TenantQuota "` + qb.Name + `" lent to its cohort`))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed(), "the lender waits for the borrower's minimum runtime, and says so")

	controllertest.EventuallyRunning(t, keyLender)
	g.Eventually(func(g Gomega) {
		w := controllertest.GetWorkspace(g, keyBig)
		g.Expect(w.Status.Lifecycle).NotTo(BeNil())
		g.Expect(w.Status.Lifecycle.Preemption).NotTo(BeNil())
		g.Expect(w.Status.Lifecycle.Preemption.At.Time.Sub(running.Status.Admission.AdmittedAt.Time)).To(BeNumerically(">=", 6*time.Second),
			"not before the borrower's minimum runtime")
		g.Expect(w.Status.Lifecycle.StopReason).To(Equal(workspacesv1.StopPreempted))
		g.Expect(w.Status.Lifecycle.Preemption.By).To(Equal(keyLender.String()))
		g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseWaiting), "it queues again on its own")
		g.Expect(controllertest.ReadHubRelease(g, w).PVC.UID).To(Equal(before.PVC.UID), "the volume claim is kept")
		g.Expect(warningNotes(g, a, keyBig.Name, workspacesv1.PreemptedReason)).To(ContainElement(ContainSubstring(keyLender.String())))
		g.Expect(getTenantQuota(g, qb.Name).Status.Used.GPUs).To(Equal([]quotav1alpha1.GPUUsage{{Name: "gpus", Count: 4}}), "b has its 4 back")
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())

	controllertest.EventuallyRunning(t, keySmall)
	g.Eventually(func(g Gomega) {
		g.Expect(getTenantQuota(g, qa.Name).Status.Used.GPUs).To(Equal([]quotav1alpha1.GPUUsage{{Name: "gpus", Count: 1}}))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
}

// TestCohortChangesNeverEvict: while a's workspace runs on 2 GPUs borrowed
// from b, a's borrowingLimit is lowered to 0 and b leaves the cohort. The
// borrower runs on, its loan kept where it is; a reads
// WithinLimits=False naming its borrowing limit, and a new workspace of a
// that would borrow waits. Once the borrower stops, its loan ends, and b,
// out of the cohort, lends nothing again.
func TestCohortChangesNeverEvict(t *testing.T) {
	g := NewWithT(t)
	p := newCohortPair(t, "cohchg", quotav1alpha1.GPULimit{Count: 2}, quotav1alpha1.GPULimit{Count: 4})
	a, qa, qb, workspace := p.a, p.qa, p.qb, p.workspace
	keyBig := controllertest.CreateWorkspace(t, workspace(a, "big", 4))
	controllertest.EventuallyRunning(t, keyBig)
	g.Eventually(func(g Gomega) {
		g.Expect(getTenantQuota(g, qb.Name).Status.Used.GPUs).To(Equal([]quotav1alpha1.GPUUsage{{Name: "gpus", Count: 2, Lent: 2}}))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())

	cur := getTenantQuota(g, qa.Name)
	controllertest.UpdateSpec(g, cur, func(q *quotav1alpha1.TenantQuota) { q.Spec.Hard.GPUs[0].BorrowingLimit = ptr.To[int64](0) })
	cur = getTenantQuota(g, qb.Name)
	controllertest.UpdateSpec(g, cur, func(q *quotav1alpha1.TenantQuota) { q.Spec.Cohort = "" })
	g.Eventually(func(g Gomega) {
		c := conditions.Get(getTenantQuota(g, qa.Name), quotav1alpha1.WithinLimitsCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Message).To(ContainSubstring(`gpus "gpus" borrowingLimit`))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
	keyMore := controllertest.CreateWorkspace(t, workspace(a, "more", 1))
	controllertest.EventuallyPhase(t, keyMore, workspacesv1.PhaseWaiting)
	g.Consistently(func(g Gomega) {
		w := controllertest.GetWorkspace(g, keyBig)
		g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseRunning))
		g.Expect(w.Status.Lifecycle).To(BeNil(), "no stop was written")
		g.Expect(getTenantQuota(g, qa.Name).Status.Used.GPUs).To(Equal([]quotav1alpha1.GPUUsage{{Name: "gpus", Count: 4, Borrowed: 2}}))
		g.Expect(getTenantQuota(g, qb.Name).Status.Used.GPUs).To(Equal([]quotav1alpha1.GPUUsage{{Name: "gpus", Count: 2, Lent: 2}}))
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed(), "lowering a limit and leaving the cohort evict nothing")

	controllertest.SetStopped(t, keyBig, true)
	controllertest.EventuallyStopped(t, keyBig)
	g.Eventually(func(g Gomega) {
		g.Expect(getTenantQuota(g, qb.Name).Status.Used.GPUs).To(Equal([]quotav1alpha1.GPUUsage{{Name: "gpus", Count: 0}}), "the stop ended the loan")
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
	controllertest.EventuallyRunning(t, keyMore)
	g.Expect(getTenantQuota(g, qb.Name).Status.Used.GPUs[0].Lent).To(BeZero())
}
