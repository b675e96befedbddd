package scale_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
)

// tenantQuota puts the benchmark's namespace under one TenantQuota whose
// limits are far above the demand (APIARY_SCALE_QUOTA=1): every admission
// is then charged to one tenant, the case of a tenant as large as a
// university, without any workspace waiting for room.
func tenantQuota(b *testing.B, ns string) {
	b.Helper()
	ctx := context.Background()
	c := clusters.Management.Client
	obj := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: ns}, obj); err != nil {
		b.Fatal(err)
	}
	if obj.Labels == nil {
		obj.Labels = map[string]string{}
	}
	obj.Labels["scale.apiary.dev/tenant"] = "university"
	if err := c.Update(ctx, obj); err != nil {
		b.Fatal(err)
	}
	q := &quotav1alpha1.TenantQuota{ObjectMeta: metav1.ObjectMeta{Name: "university-" + ns}, Spec: quotav1alpha1.TenantQuotaSpec{
		NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"scale.apiary.dev/tenant": "university"}},
		Hard:              quotav1alpha1.QuotaLimits{Workspaces: ptr.To[int64](1_000_000)},
	}}
	if err := c.Create(ctx, q); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Delete(context.Background(), q) })
}
