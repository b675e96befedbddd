package prerequisite

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	"github.com/apiaryhq/apiary/internal/delivery"
	"github.com/apiaryhq/apiary/internal/naming"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
)

// Owner is the delivery owner of a shared prerequisite ServiceSet.
func Owner(namespace, serviceSet string) delivery.Owner {
	return delivery.Owner{Kind: OwnerKind, Namespace: namespace, Name: serviceSet}
}

// ServiceSets lists, from the cache, the prerequisite
// ServiceSets of a ClusterDeployment, by their role and cluster labels.
func ServiceSets(ctx context.Context, c client.Reader, cd types.NamespacedName) ([]k0rdentv1beta1.ServiceSet, error) {
	list := &k0rdentv1beta1.ServiceSetList{}
	if err := c.List(ctx, list, client.InNamespace(cd.Namespace), client.MatchingLabels{
		plan.RoleLabel: plan.RolePrerequisite, plan.PrerequisiteClusterLabel: naming.LabelValue(cd.Name),
	}); err != nil {
		return nil, fmt.Errorf("listing the prerequisite ServiceSets of %s: %w", cd, err)
	}
	return list.Items, nil
}

// Entry is the service a prerequisite ServiceSet installs: the
// one of the template its template label names, else its first.
func Entry(ss *k0rdentv1beta1.ServiceSet) *k0rdentv1beta1.ServiceWithValues {
	for i := range ss.Spec.Services {
		if naming.LabelValue(ss.Spec.Services[i].Template) == ss.Labels[plan.PrerequisiteTemplateLabel] {
			return &ss.Spec.Services[i]
		}
	}
	if len(ss.Spec.Services) > 0 {
		return &ss.Spec.Services[0]
	}
	return nil
}

// InstalledTemplate describes the template a ServiceSet of namespace
// installs: k0rdent resolves it in the ServiceSet's namespace; kcm-system
// holds the catalog otherwise.
func InstalledTemplate(ctx context.Context, c client.Reader, namespace, name string) (Template, error) {
	return TemplateInfo(ctx, c, name,
		client.ObjectKey{Namespace: namespace, Name: name}, client.ObjectKey{Namespace: k0rdentv1beta1.SystemNamespace, Name: name})
}

// TemplateInfo describes the first of the keys that names a
// ServiceTemplate in the cache; a template found under none is a
// prerequisite of its own, of no known version.
func TemplateInfo(ctx context.Context, c client.Reader, name string, keys ...client.ObjectKey) (Template, error) {
	for _, key := range keys {
		st := &k0rdentv1beta1.ServiceTemplate{}
		err := c.Get(ctx, key, st)
		if err == nil {
			return FromServiceTemplate(st), nil
		}
		if !apierrors.IsNotFound(err) {
			return Template{}, fmt.Errorf("reading ServiceTemplate %s: %w", key, err)
		}
	}
	return Unresolved(name), nil
}

// OwnerKind is the delivery owner kind of shared prerequisites.
const OwnerKind = "Prerequisite"
