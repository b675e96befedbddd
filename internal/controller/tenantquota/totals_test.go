package tenantquota_test

import (
	"context"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/controllertest"
)

const nv = "nvidia.com/gpu"

// quotaWith creates a quota of a tenant and waits until Apiary enforces it.
func quotaWith(t *testing.T, g Gomega, tenant string, hard quotav1alpha1.QuotaLimits) *quotav1alpha1.TenantQuota {
	ctx := context.Background()
	q := &quotav1alpha1.TenantQuota{ObjectMeta: metav1.ObjectMeta{Name: tenant}, Spec: quotav1alpha1.TenantQuotaSpec{
		NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tenant": tenant}}, Hard: hard}}
	g.Expect(controllertest.Env.Client.Create(ctx, q)).To(Succeed())
	t.Cleanup(func() { _ = client.IgnoreNotFound(controllertest.Env.Client.Delete(context.Background(), q)) })
	g.Eventually(func(g Gomega) {
		g.Expect(controllertest.Env.Client.Get(ctx, client.ObjectKeyFromObject(q), q)).To(Succeed())
		g.Expect(q.Status.Totals).To(BeTrue())
	}, controllertest.Timeout, 100*time.Millisecond).Should(Succeed())
	return q
}

// setStatus changes a quota's status as a workspace's Ledger would.
func setStatus(g Gomega, q *quotav1alpha1.TenantQuota, change func(*quotav1alpha1.TenantQuota)) {
	g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := controllertest.Env.Client.Get(context.Background(), client.ObjectKeyFromObject(q), q); err != nil {
			return err
		}
		change(q)
		return controllertest.Env.Client.Status().Update(context.Background(), q)
	})).To(Succeed())
}

// TestRecountAfterTheGPULimitsChange: a GPU limit added to a quota is
// counted from the workspaces' own records (read live, not from a cache a
// shard filters), and until then what grows waits.
func TestRecountAfterTheGPULimitsChange(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	tenant := "recount-" + rand.String(5)
	ns := controllertest.Env.NewNamespace(t, tenant)
	q := quotaWith(t, g, tenant, quotav1alpha1.QuotaLimits{GPUs: []quotav1alpha1.GPULimit{{Name: "all", ResourceName: nv, Count: 8}}})

	// An admitted workspace of 2 H100s, as its reconcile left it: its
	// record on its status, the quota's totals counting it.
	w := &workspacesv1.WorkspaceDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "h100s"},
		Spec: workspacesv1.WorkspaceDeploymentSpec{WorkspaceClassRef: "none", ClusterDeploymentRef: workspacesv1.ClusterDeploymentReference{Name: "none"}}}
	g.Expect(controllertest.Env.Client.Create(ctx, w)).To(Succeed())
	t.Cleanup(func() { _ = controllertest.Env.Client.Delete(context.Background(), w) })
	g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := controllertest.Env.Client.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
			return err
		}
		w.Status.QuotaCharges = []workspacesv1.WorkspaceQuotaCharge{{Quota: q.Name, QuotaUID: q.UID, Token: "t1", GPUs: 2,
			ResourceName: nv, Selector: map[string]string{"exalsius.ai/gpu-model": "H100"}}}
		return controllertest.Env.Client.Status().Update(ctx, w)
	})).To(Succeed())
	setStatus(g, q, func(q *quotav1alpha1.TenantQuota) {
		q.Status.Used = quotav1alpha1.QuotaUsage{Workspaces: 1, GPUs: []quotav1alpha1.GPUUsage{{Name: "all", Count: 2}}}
	})

	controllertest.UpdateSpec(g, q, func(q *quotav1alpha1.TenantQuota) {
		q.Spec.Hard.GPUs = append(q.Spec.Hard.GPUs, quotav1alpha1.GPULimit{Name: "h100", ResourceName: nv, GPUModel: "H100", Count: 4})
		q.Spec.Hard.Workspaces = ptr.To[int64](5)
	})
	g.Eventually(func(g Gomega) {
		got := &quotav1alpha1.TenantQuota{}
		g.Expect(controllertest.Env.Client.Get(ctx, client.ObjectKeyFromObject(q), got)).To(Succeed())
		g.Expect(got.Status.Hard.GPUs).To(HaveLen(2), "the limits counted are the spec's")
		g.Expect(got.Status.Used.GPUs).To(Equal([]quotav1alpha1.GPUUsage{{Name: "all", Count: 2}, {Name: "h100", Count: 2}}))
		g.Expect(got.Status.Used.Workspaces).To(Equal(int64(1)))
		g.Expect(got.Status.Summary).To(Equal("gpus/all: 2/8, gpus/h100: 2/4, workspaces: 1/5"))
	}, controllertest.Timeout, 100*time.Millisecond).Should(Succeed())
}

// TestAChangeOfAWorkspaceThatIsGoneLeavesTheTotals: a quota's in-flight
// charge of a workspace that vanished (its finalizer removed by hand) is
// taken out of the totals once old, the workspace confirmed gone live.
func TestAChangeOfAWorkspaceThatIsGoneLeavesTheTotals(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	tenant := "gone-" + rand.String(5)
	q := quotaWith(t, g, tenant, quotav1alpha1.QuotaLimits{Workspaces: ptr.To[int64](3)})
	setStatus(g, q, func(q *quotav1alpha1.TenantQuota) {
		q.Status.Used = quotav1alpha1.QuotaUsage{Workspaces: 1}
		q.Status.Inflight = []quotav1alpha1.QuotaTransition{{Namespace: tenant, Name: "vanished", UID: "uid-vanished",
			Token: "t1", Op: quotav1alpha1.ChargeOp, At: metav1.NewTime(time.Now().Add(-time.Hour))}}
	})
	controllertest.UpdateSpec(g, q, func(q *quotav1alpha1.TenantQuota) { q.Spec.Hard.Workspaces = ptr.To[int64](4) })
	g.Eventually(func(g Gomega) {
		got := &quotav1alpha1.TenantQuota{}
		g.Expect(controllertest.Env.Client.Get(ctx, client.ObjectKeyFromObject(q), got)).To(Succeed())
		g.Expect(got.Status.Inflight).To(BeEmpty())
		g.Expect(got.Status.Used.Workspaces).To(BeZero())
	}, controllertest.Timeout, 100*time.Millisecond).Should(Succeed())
}

// TestARequestedReconcileRecountsTheTotals: a share lost with a workspace
// removed without its finalizer (no change in flight to tell) is repaired
// by a requested reconcile (reconcile.fluxcd.io/requestedAt), which
// recounts the totals from every workspace's record.
func TestARequestedReconcileRecountsTheTotals(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	tenant := "leak-" + rand.String(5)
	ns := controllertest.Env.NewNamespace(t, tenant)
	q := quotaWith(t, g, tenant, quotav1alpha1.QuotaLimits{Workspaces: ptr.To[int64](5)})
	w := &workspacesv1.WorkspaceDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "counted"},
		Spec: workspacesv1.WorkspaceDeploymentSpec{WorkspaceClassRef: "none", ClusterDeploymentRef: workspacesv1.ClusterDeploymentReference{Name: "none"}}}
	g.Expect(controllertest.Env.Client.Create(ctx, w)).To(Succeed())
	t.Cleanup(func() { _ = controllertest.Env.Client.Delete(context.Background(), w) })
	g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := controllertest.Env.Client.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
			return err
		}
		w.Status.QuotaCharges = []workspacesv1.WorkspaceQuotaCharge{{Quota: q.Name, QuotaUID: q.UID, Token: "t1"}}
		return controllertest.Env.Client.Status().Update(ctx, w)
	})).To(Succeed())
	setStatus(g, q, func(q *quotav1alpha1.TenantQuota) { q.Status.Used.Workspaces = 3 }) // two shares leaked

	g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := controllertest.Env.Client.Get(ctx, client.ObjectKeyFromObject(q), q); err != nil {
			return err
		}
		q.Annotations = map[string]string{meta.ReconcileRequestAnnotation: "now"}
		return controllertest.Env.Client.Update(ctx, q)
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := &quotav1alpha1.TenantQuota{}
		g.Expect(controllertest.Env.Client.Get(ctx, client.ObjectKeyFromObject(q), got)).To(Succeed())
		g.Expect(got.Status.LastHandledReconcileAt).To(Equal("now"))
		g.Expect(got.Status.Used.Workspaces).To(Equal(int64(1)), "recounted from the records")
	}, controllertest.Timeout, 100*time.Millisecond).Should(Succeed())
}
