package quota

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// Of returns the TenantQuotas that select a namespace, read with c (the
// cache), by name. A quota whose selector does not parse selects nothing
// (its own status says so); one being deleted selects nothing either.
func Of(ctx context.Context, c client.Reader, namespace string) ([]*quotav1alpha1.TenantQuota, error) {
	list := &quotav1alpha1.TenantQuotaList{}
	if err := c.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing TenantQuotas: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, nil
	}
	labels, err := NamespaceLabels(ctx, c, namespace)
	if err != nil {
		return nil, err
	}
	var out []*quotav1alpha1.TenantQuota
	for i := range list.Items {
		q := &list.Items[i]
		if ok, _ := Selects(q, labels); ok && q.DeletionTimestamp.IsZero() {
			out = append(out, q)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// NamespaceLabels reads a namespace's labels with c (the metadata cache);
// none for a namespace that is gone.
func NamespaceLabels(ctx context.Context, c client.Reader, namespace string) (map[string]string, error) {
	ns := &metav1.PartialObjectMetadata{}
	ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
	if err := c.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading namespace %s: %w", namespace, err)
	}
	return ns.Labels, nil
}

// Holders lists, with c (the cache), the quotas that count something of a
// workspace or list a change of it in flight: those its records name, and
// any other that lists it.
func Holders(ctx context.Context, c client.Reader, ref Ref, records []workspacesv1.WorkspaceQuotaCharge) ([]*quotav1alpha1.TenantQuota, error) {
	list := &quotav1alpha1.TenantQuotaList{}
	if err := c.List(ctx, list); err != nil {
		return nil, fmt.Errorf("listing TenantQuotas: %w", err)
	}
	var out []*quotav1alpha1.TenantQuota
	for i := range list.Items {
		q := &list.Items[i]
		if Counted(q, ref, records) != nil || FindInflight(q, ref.UID) != nil {
			out = append(out, q)
		}
	}
	return out, nil
}

// Held is what a stopped workspace holds of a quota, in place of its
// charge c: its place in the workspaces count (its namespace, release and
// volumes stay), and no GPUs, CPU or memory, which it gave back.
func Held(c quotav1alpha1.QuotaCharge) quotav1alpha1.QuotaCharge {
	return quotav1alpha1.QuotaCharge{Namespace: c.Namespace, Name: c.Name, UID: c.UID, ChargedAt: c.ChargedAt}
}

// IsHeld reports whether a charge is a stopped workspace's (Held).
func IsHeld(c quotav1alpha1.QuotaCharge) bool { return SameAmounts(c, Held(c)) }
