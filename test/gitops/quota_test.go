package gitops_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/test/world/builder"
)

// TestQuotaHoldsBackCommitsThroughGit: in Git mode a workspace over its
// tenant's quota waits, read from the management cluster, and nothing of
// it is committed; once the quota gives room it is committed, applied by
// Flux and runs, and the quota counts it.
func TestQuotaHoldsBackCommitsThroughGit(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "gitops-quota")
	nsObj := &corev1.Namespace{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: ns}, nsObj)).To(Succeed())
	nsObj.Labels = map[string]string{"tenant": ns}
	g.Expect(env.Client.Update(ctx, nsObj)).To(Succeed())
	q := &quotav1alpha1.TenantQuota{ObjectMeta: metav1.ObjectMeta{Name: ns}, Spec: quotav1alpha1.TenantQuotaSpec{
		NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tenant": ns}},
		Hard:              quotav1alpha1.QuotaLimits{Workspaces: ptr.To[int64](0)},
	}}
	g.Expect(env.Client.Create(ctx, q)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), q) })

	k0rdentFixtures(t, ns)
	c := colony(ns, "fleet", "q")
	g.Expect(env.Client.Create(ctx, c)).To(Succeed())
	eventuallyTrue(t, c, commonv1.ReadyCondition)
	class := builder.NewClass(ns, "notebook", builder.Named("quota-"+ns))
	g.Expect(env.Client.Create(ctx, class)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), class) })
	w := builder.Workspace(ns, "quota-nb", class.Name, "fleet-q")
	g.Expect(env.Client.Create(ctx, w)).To(Succeed())
	w = eventuallyReason(t, w, workspacesv1.QuotaReservedCondition, workspacesv1.QuotaExceededReason)
	g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseWaiting))
	file := objectFile(ns, "serviceset", "wsd-fleet-q-quota-nb")
	g.Consistently(func() string { return headFile(t, file) }, 3*time.Second, 500*time.Millisecond).Should(BeEmpty(),
		"nothing of a workspace over quota is committed")

	g.Eventually(func() error {
		cur := &quotav1alpha1.TenantQuota{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(q), cur); err != nil {
			return err
		}
		cur.Spec.Hard.Workspaces = ptr.To[int64](1)
		return env.Client.Update(ctx, cur)
	}, timeout).Should(Succeed())
	w = eventuallyTrue(t, w, commonv1.CommittedCondition, commonv1.SyncedCondition, commonv1.ReadyCondition)
	g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseRunning))
	g.Expect(headFile(t, file)).To(ContainSubstring("wsd-fleet-q-quota-nb"))
	g.Eventually(func(g Gomega) {
		cur := &quotav1alpha1.TenantQuota{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(q), cur)).To(Succeed())
		g.Expect(cur.Status.Summary).To(Equal("workspaces: 1/1"))
	}, timeout, 200*time.Millisecond).Should(Succeed())

	g.Expect(env.Client.Delete(ctx, w)).To(Succeed())
	eventuallyGone(t, w)
}
