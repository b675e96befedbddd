package reconciler

import (
	"context"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// RequestsForAll lists every object of list's kind with c and returns a
// request for each: a mapping for kinds that are few (Colonies, quotas),
// where picking by cached status could drop the one that must be woken.
func RequestsForAll(ctx context.Context, c client.Reader, list client.ObjectList) []reconcile.Request {
	if err := c.List(ctx, list); err != nil {
		return nil
	}
	items, err := apimeta.ExtractList(list)
	if err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(items))
	for _, item := range items {
		if o, ok := item.(client.Object); ok {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o)})
		}
	}
	return out
}
