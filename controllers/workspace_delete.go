package controllers

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/delivery"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
)

// deletionInventory is what deleting a directly delivered workspace
// removes: its recorded inventory, and its ServiceSet and values Secret by
// their names. A
// manager stopped between applying the ServiceSet and recording the
// inventory (killed, evicted) leaves them out of it, and they must not
// outlive the workspace. The sink removes only objects that belong to the
// workspace (its owner labels, or, for a ServiceSet the exalsius operator
// wrote and Apiary has not written yet, an ownerReference to it and no
// Apiary owner labels), so naming one that is not there, or that another
// owner holds, removes nothing. (In Git mode the sink's sweep removes the
// files of workspaces that are gone.)
func deletionInventory(obj *workspacesv1.WorkspaceDeployment) *commonv1.ResourceInventory {
	cd := clusterKey(obj)
	named := func(apiVersion, kind, name string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion(apiVersion)
		u.SetKind(kind)
		u.SetNamespace(cd.Namespace)
		u.SetName(name)
		return u
	}
	objs := []*unstructured.Unstructured{
		named(k0rdentv1beta1.GroupVersion.String(), "ServiceSet", serviceSetName(obj)),
		named("v1", "Secret", plan.ValuesSecretName(cd.Name, obj.Name)),
	}
	inv := delivery.NewInventory(objs)
	if obj.Status.Delivery == nil || obj.Status.Delivery.Inventory == nil {
		return inv
	}
	known := map[string]bool{}
	out := obj.Status.Delivery.Inventory.DeepCopy()
	for _, e := range out.Entries {
		known[e.ID] = true
	}
	for _, e := range inv.Entries {
		if !known[e.ID] {
			out.Entries = append(out.Entries, e)
		}
	}
	return out
}
