package tenantquota_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	"github.com/apiaryhq/apiary/internal/controller/controllertest"
)

// TestTenantQuotaKstatus: a TenantQuota reads InProgress until Apiary
// enforces it, Current once it does, Failed with a selector that selects
// nothing, and Current again once fixed.
func TestTenantQuotaKstatus(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	name := "kstatus-" + rand.String(5)
	rec := controllertest.WatchConditionsKstatus(t, "TenantQuota", &quotav1alpha1.TenantQuotaList{}, nil,
		func(o client.Object) bool { return o.GetName() == name })
	q := &quotav1alpha1.TenantQuota{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: quotav1alpha1.TenantQuotaSpec{
		NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tenant": name}},
	}}
	g.Expect(controllertest.Env.Client.Create(ctx, q)).To(Succeed())
	t.Cleanup(func() { _ = client.IgnoreNotFound(controllertest.Env.Client.Delete(context.Background(), q)) })
	eventuallyQuota := func(want metav1.ConditionStatus, cond string) {
		g.Eventually(func(g Gomega) {
			got := &quotav1alpha1.TenantQuota{}
			g.Expect(controllertest.Env.Client.Get(ctx, client.ObjectKeyFromObject(q), got)).To(Succeed())
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
			g.Expect(controllertest.ConditionStatus(got, cond)).To(Equal(want))
		}, controllertest.Timeout, 100*time.Millisecond).Should(Succeed())
	}
	eventuallyQuota(metav1.ConditionTrue, commonv1.ReadyCondition)
	controllertest.UpdateSpec(g, q, func(q *quotav1alpha1.TenantQuota) {
		q.Spec.NamespaceSelector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "tenant", Operator: metav1.LabelSelectorOpIn}}}
	})
	eventuallyQuota(metav1.ConditionTrue, commonv1.StalledCondition)
	controllertest.UpdateSpec(g, q, func(q *quotav1alpha1.TenantQuota) {
		q.Spec.NamespaceSelector = metav1.LabelSelector{MatchLabels: map[string]string{"tenant": name}}
	})
	eventuallyQuota(metav1.ConditionTrue, commonv1.ReadyCondition)
	g.Eventually(func(g Gomega) {
		rec.Check(g, string(status.InProgressStatus), string(status.CurrentStatus), string(status.FailedStatus))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
}
