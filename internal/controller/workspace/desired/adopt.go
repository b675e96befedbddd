package desired

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	"github.com/apiaryhq/apiary/internal/workspace/values"
)

// KeepAdoptedValues, for each rendered ServiceSet that exists, keeps the
// values text of every service whose rendered values mean the same
// (values.Equivalent): a ServiceSet the exalsius operator wrote then holds
// what Apiary renders, so the sink leaves it unwritten until Apiary changes
// it (the workspace owner's delivery.DeferAdoption), Sveltos does not upgrade the
// Helm release, and later reconciles render the same.
func (r *Renderer) KeepAdoptedValues(ctx context.Context, objs []*unstructured.Unstructured) error {
	for _, o := range objs {
		if o.GroupVersionKind() != k0rdentv1beta1.GroupVersion.WithKind("ServiceSet") {
			continue
		}
		live := &k0rdentv1beta1.ServiceSet{}
		if err := r.Reader.Get(ctx, client.ObjectKeyFromObject(o), live); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return fmt.Errorf("reading ServiceSet %s: %w", o.GetName(), err)
		}
		services, _, _ := unstructured.NestedSlice(o.Object, "spec", "services")
		for i, s := range services {
			svc, ok := s.(map[string]any)
			if !ok {
				continue
			}
			name, _ := svc["name"].(string)
			rendered, _ := svc["values"].(string)
			for _, have := range live.Spec.Services {
				if have.Name != name || have.Values == rendered || !values.Equivalent(have.Values, rendered) {
					continue
				}
				if have.Values == "" {
					delete(svc, "values")
				} else {
					svc["values"] = have.Values
				}
				services[i] = svc
			}
		}
		if err := unstructured.SetNestedSlice(o.Object, services, "spec", "services"); err != nil {
			return fmt.Errorf("ServiceSet %s: %w", o.GetName(), err)
		}
	}
	return nil
}
