package admission_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/admission"
	"github.com/apiaryhq/apiary/internal/quota"
)

func tenantQuota(t *testing.T, name, tenantLabel string, hard quotav1alpha1.QuotaLimits) *quotav1alpha1.TenantQuota {
	t.Helper()
	q := &quotav1alpha1.TenantQuota{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: quotav1alpha1.TenantQuotaSpec{
		NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tenant": tenantLabel}},
		Hard:              hard,
	}}
	if err := env.Client.Create(context.Background(), q); err != nil {
		t.Fatalf("creating TenantQuota: %v", err)
	}
	t.Cleanup(func() { _ = client.IgnoreNotFound(env.Client.Delete(context.Background(), q)) })
	return q
}

func getQuota(g Gomega, name string) *quotav1alpha1.TenantQuota {
	q := &quotav1alpha1.TenantQuota{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Name: name}, q)).To(Succeed())
	return q
}

func updateQuota(t *testing.T, name string, change func(*quotav1alpha1.TenantQuota)) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		q := getQuota(g, name)
		change(q)
		g.Expect(env.Client.Update(context.Background(), q)).To(Succeed())
	}, timeout, 100*time.Millisecond).Should(Succeed())
}

func nvidia(count int64) []quotav1alpha1.GPULimit {
	return []quotav1alpha1.GPULimit{{Name: "all", ResourceName: "nvidia.com/gpu", Count: count}}
}

// TestQuotaAcrossTwoNamespacesOfATenant: a tenant's two namespaces share
// one 2-GPU quota; the second workspace waits, naming the quota and what it
// uses, until the first goes. The quota's status follows.
func TestQuotaAcrossTwoNamespacesOfATenant(t *testing.T) {
	g := NewWithT(t)
	apiary(t, admission.StrictFIFO, false)
	gpuNode(t, "twons-n1", map[string]string{"exalsius.ai/gpu-model": "twons"}, 8)
	tenantQuota(t, "team-twons", "twons", quotav1alpha1.QuotaLimits{GPUs: nvidia(2), Workspaces: ptr.To[int64](5)})
	ns1 := tenant(t, "twons-a", map[string]string{"tenant": "twons"})
	ns2 := tenant(t, "twons-b", map[string]string{"tenant": "twons"})

	first := workspace(t, ns1, "twons-first", class(t, ns1), gpus{count: 2, model: "twons"})
	eventuallyPhase(t, first, workspacesv1.PhaseRunning)
	second := workspace(t, ns2, "twons-second", class(t, ns2), gpus{count: 1, model: "twons"})
	w := eventuallyWaiting(t, second, workspacesv1.QuotaReservedCondition, workspacesv1.QuotaExceededReason)
	g.Expect(w.Status.Message).To(Equal(`Waiting for room in TenantQuota "team-twons" has no room: gpus "all": 1 requested, 2 of 2 used`))
	g.Expect(serviceSets(g, ns2)).To(BeEmpty())
	g.Eventually(func(g Gomega) {
		q := getQuota(g, "team-twons")
		g.Expect(q.Status.Summary).To(Equal("gpus/all: 2/2, workspaces: 1/5"))
		g.Expect(quota.Counted(q, quota.RefOf(get(g, first)), get(g, first).Status.QuotaCharges)).To(HaveField("GPUs", BeEquivalentTo(2)),
			"the first workspace's share, on its own status")
		g.Expect(quota.Counted(q, quota.RefOf(get(g, second)), get(g, second).Status.QuotaCharges)).To(BeNil())
		g.Expect(isTrue(q.Status.Conditions, commonv1.ReadyCondition)).To(BeTrue())
		g.Expect(isTrue(q.Status.Conditions, quotav1alpha1.WithinLimitsCondition)).To(BeTrue())
	}, timeout, 200*time.Millisecond).Should(Succeed())

	deleteAndWait(t, first)
	eventuallyPhase(t, second, workspacesv1.PhaseRunning)
	g.Eventually(func(g Gomega) {
		q := getQuota(g, "team-twons")
		g.Expect(q.Status.Summary).To(Equal("gpus/all: 1/2, workspaces: 1/5"))
		rec := quota.RecordOf(get(g, second).Status.QuotaCharges, q)
		g.Expect(rec).NotTo(BeNil(), "the second workspace records its charge")
		g.Expect(rec.GPUs).To(BeEquivalentTo(1))
		g.Expect(q.Status.Inflight).To(BeEmpty(), "every change settled")
		g.Expect(q.Status.Used.Workspaces).To(BeEquivalentTo(1))
	}, timeout, 200*time.Millisecond).Should(Succeed())
}

// TestQuotaLoweredEvictsNothing: lowering a quota below what runs leaves
// the running workspaces alone, marks the quota over its limits and makes
// new ones wait until enough went.
func TestQuotaLoweredEvictsNothing(t *testing.T) {
	g := NewWithT(t)
	apiary(t, admission.StrictFIFO, false)
	tenantQuota(t, "team-lower", "lower", quotav1alpha1.QuotaLimits{Workspaces: ptr.To[int64](3)})
	ns := tenant(t, "lower", map[string]string{"tenant": "lower"})
	cls := class(t, ns)
	a := workspace(t, ns, "lower-a", cls, gpus{})
	b := workspace(t, ns, "lower-b", cls, gpus{})
	running(t, a)
	running(t, b)

	updateQuota(t, "team-lower", func(q *quotav1alpha1.TenantQuota) { q.Spec.Hard.Workspaces = ptr.To[int64](1) })
	g.Eventually(func(g Gomega) {
		q := getQuota(g, "team-lower")
		g.Expect(q.Status.ObservedGeneration).To(Equal(q.Generation))
		g.Expect(isTrue(q.Status.Conditions, quotav1alpha1.WithinLimitsCondition)).To(BeFalse())
		g.Expect(q.Status.Summary).To(Equal("workspaces: 2/1"))
		g.Expect(q.Status.Hard.Workspaces).To(HaveValue(Equal(int64(1))), "the limits enforced")
	}, timeout, 200*time.Millisecond).Should(Succeed())
	c := workspace(t, ns, "lower-c", cls, gpus{})
	w := eventuallyWaiting(t, c, workspacesv1.QuotaReservedCondition, workspacesv1.QuotaExceededReason)
	g.Expect(w.Status.Message).To(ContainSubstring("workspaces: 1 requested, 2 of 1 used"))
	g.Consistently(func(g Gomega) {
		g.Expect(get(g, a).Status.Phase).To(Equal(workspacesv1.PhaseRunning))
		g.Expect(get(g, b).Status.Phase).To(Equal(workspacesv1.PhaseRunning))
	}, 2*time.Second, 200*time.Millisecond).Should(Succeed())

	deleteAndWait(t, a)
	g.Consistently(func(g Gomega) { g.Expect(get(g, c).Status.Phase).To(Equal(workspacesv1.PhaseWaiting)) },
		2*time.Second, 200*time.Millisecond).Should(Succeed(), "1 of 1 used")
	deleteAndWait(t, b)
	running(t, c)
}

// TestQuotaDeletedFreesItsWaiters: deleting the quota a workspace waits
// for lets it in.
func TestQuotaDeletedFreesItsWaiters(t *testing.T) {
	g := NewWithT(t)
	apiary(t, admission.StrictFIFO, false)
	q := tenantQuota(t, "team-gone", "gone", quotav1alpha1.QuotaLimits{Workspaces: ptr.To[int64](0)})
	ns := tenant(t, "gone", map[string]string{"tenant": "gone"})
	w := workspace(t, ns, "gone-w", class(t, ns), gpus{})
	eventuallyWaiting(t, w, workspacesv1.QuotaReservedCondition, workspacesv1.QuotaExceededReason)
	g.Expect(env.Client.Delete(context.Background(), q)).To(Succeed())
	running(t, w)
}

// TestOverQuotaTenantWaitsOtherTenantProceeds: on one cluster, a tenant at
// its GPU quota waits while another tenant's workspace is admitted; and a
// younger workspace of the full tenant waits behind the older one (first
// come, first served within a quota) even on another limit's room.
func TestOverQuotaTenantWaitsOtherTenantProceeds(t *testing.T) {
	g := NewWithT(t)
	apiary(t, admission.StrictFIFO, true)
	gpuNode(t, "tenants-n1", map[string]string{"exalsius.ai/gpu-model": "tenants"}, 8)
	tenantQuota(t, "team-full", "full", quotav1alpha1.QuotaLimits{GPUs: nvidia(1)})
	shared := tenant(t, "tenants-cluster", nil)
	cls := class(t, shared)
	full := env.NewNamespace(t, "tenants-full")
	setNamespaceLabels(t, full, map[string]string{"tenant": "full"})
	free := env.NewNamespace(t, "tenants-free")
	on := func(ns, name string, g gpus) *workspacesv1.WorkspaceDeployment {
		w := &workspacesv1.WorkspaceDeployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: workspacesv1.WorkspaceDeploymentSpec{WorkspaceClassRef: cls,
				ClusterDeploymentRef: workspacesv1.ClusterDeploymentReference{Name: "c1", Namespace: shared}}}
		w.Spec.Resources = g.resources()
		create(t, w)
		return w
	}
	held := on(full, "tenants-held", gpus{count: 1, model: "tenants"})
	eventuallyPhase(t, held, workspacesv1.PhaseRunning)
	blocked := on(full, "tenants-blocked", gpus{count: 1, model: "tenants"})
	eventuallyWaiting(t, blocked, workspacesv1.QuotaReservedCondition, workspacesv1.QuotaExceededReason)
	time.Sleep(1100 * time.Millisecond)
	behind := on(full, "tenants-behind", gpus{count: 1, model: "tenants"})
	w := eventuallyWaiting(t, behind, workspacesv1.QuotaReservedCondition, workspacesv1.WaitingBehindOlderReason)
	g.Expect(w.Status.Message).To(HaveSuffix("`apiary queue` shows its place in the queue"))
	other := on(free, "tenants-other", gpus{count: 4, model: "tenants"})
	eventuallyPhase(t, other, workspacesv1.PhaseRunning)

	deleteAndWait(t, held)
	defer func() {
		if t.Failed() {
			t.Logf("quota: %+v", getQuota(g, "team-full").Status)
		}
	}()
	eventuallyPhase(t, blocked, workspacesv1.PhaseRunning)
	eventuallyWaiting(t, behind, workspacesv1.QuotaReservedCondition, workspacesv1.QuotaExceededReason)
}

// TestQuotaCountsWhatRanBefore: a quota created after its tenant's
// workspaces were admitted counts them, and a namespace that joins the
// tenant brings its workspaces along; one that leaves takes them away.
func TestQuotaCountsWhatRanBefore(t *testing.T) {
	g := NewWithT(t)
	apiary(t, admission.StrictFIFO, false)
	gpuNode(t, "before-n1", map[string]string{"exalsius.ai/gpu-model": "before"}, 8)
	ns1 := tenant(t, "before-a", map[string]string{"tenant": "before"})
	ns2 := tenant(t, "before-b", nil)
	a := workspace(t, ns1, "before-a", class(t, ns1), gpus{count: 3, model: "before"})
	b := workspace(t, ns2, "before-b", class(t, ns2), gpus{count: 2, model: "before"})
	running(t, a)
	running(t, b)
	tenantQuota(t, "team-before", "before", quotav1alpha1.QuotaLimits{GPUs: nvidia(4)})
	g.Eventually(func(g Gomega) {
		g.Expect(getQuota(g, "team-before").Status.Summary).To(Equal("gpus/all: 3/4, workspaces: 1"))
	}, timeout, 200*time.Millisecond).Should(Succeed())

	setNamespaceLabels(t, ns2, map[string]string{"tenant": "before"})
	g.Eventually(func(g Gomega) {
		q := getQuota(g, "team-before")
		g.Expect(q.Status.Summary).To(Equal("gpus/all: 5/4, workspaces: 2"))
		g.Expect(isTrue(q.Status.Conditions, quotav1alpha1.WithinLimitsCondition)).To(BeFalse())
	}, timeout, 200*time.Millisecond).Should(Succeed())
	g.Expect(get(g, b).Status.Phase).To(Equal(workspacesv1.PhaseRunning), "joining a tenant evicts nothing")

	setNamespaceLabels(t, ns1, nil)
	g.Eventually(func(g Gomega) {
		g.Expect(getQuota(g, "team-before").Status.Summary).To(Equal("gpus/all: 2/4, workspaces: 1"))
	}, timeout, 200*time.Millisecond).Should(Succeed())
}
