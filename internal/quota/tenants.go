package quota

import (
	"context"
	"errors"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
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

// ReleaseAll removes a deleted workspace's charges from every quota that
// holds one, listed with the ledger's Client (the cache).
func (l *Ledger) ReleaseAll(ctx context.Context, uid types.UID) error {
	list := &quotav1alpha1.TenantQuotaList{}
	if err := l.Client.List(ctx, list); err != nil {
		return fmt.Errorf("listing TenantQuotas: %w", err)
	}
	var names []string
	for i := range list.Items {
		if Find(list.Items[i].Status.Charges, uid) != nil {
			names = append(names, list.Items[i].Name)
		}
	}
	if err := l.Release(ctx, names, uid); err != nil {
		return fmt.Errorf("releasing the workspace's quota charges: %w", err)
	}
	return nil
}

// Held is what a stopped workspace holds of a quota, in place of its
// charge c: its place in the workspaces count (its namespace, release and
// volumes stay), and no GPUs, CPU or memory, which it gave back.
func Held(c quotav1alpha1.QuotaCharge) quotav1alpha1.QuotaCharge {
	return quotav1alpha1.QuotaCharge{Namespace: c.Namespace, Name: c.Name, UID: c.UID, ChargedAt: c.ChargedAt}
}

// IsHeld reports whether a charge is a stopped workspace's (Held).
func IsHeld(c quotav1alpha1.QuotaCharge) bool { return SameAmounts(c, Held(c)) }

// HoldAll replaces a stopping workspace's charges, in every quota that
// holds one (listed with the ledger's Client, the cache), with Held: the
// workspace keeps counting towards its tenant's workspaces limit while it
// is stopped, and gives back its GPUs, CPU and memory. Each quota is
// written with the ledger's optimistic concurrency.
func (l *Ledger) HoldAll(ctx context.Context, uid types.UID) error {
	list := &quotav1alpha1.TenantQuotaList{}
	if err := l.Client.List(ctx, list); err != nil {
		return fmt.Errorf("listing TenantQuotas: %w", err)
	}
	var errs []error
	for i := range list.Items {
		if Find(list.Items[i].Status.Charges, uid) == nil {
			continue
		}
		if err := l.Write(ctx, list.Items[i].Name, func(q *quotav1alpha1.TenantQuota) bool {
			cur := Find(q.Status.Charges, uid)
			if cur == nil || IsHeld(*cur) {
				return false
			}
			q.Status.Charges = Upsert(q.Status.Charges, Held(*cur))
			return true
		}); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("holding the stopped workspace's quota charges: %w", err)
	}
	return nil
}
