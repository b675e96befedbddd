package plan

import (
	"k8s.io/apimachinery/pkg/types"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/naming"
)

// Labels of what Apiary creates for a workspace: its ServiceSet, and its
// namespace on the child cluster.
const (
	// WorkspaceLabel names the workspace.
	WorkspaceLabel = "workspaces.exalsius.ai/workspace"
	// WorkspaceOwnerNamespaceLabel names the workspace's namespace.
	WorkspaceOwnerNamespaceLabel = "workspaces.exalsius.ai/workspace-namespace"
	// ManagedByLabel says that Apiary manages the object.
	ManagedByLabel = "app.kubernetes.io/managed-by"
)

// ClusterKey is the ClusterDeployment a workspace targets; its namespace
// defaults to the workspace's.
func ClusterKey(obj *workspacesv1.WorkspaceDeployment) types.NamespacedName {
	ns := obj.Spec.ClusterDeploymentRef.Namespace
	if ns == "" {
		ns = obj.Namespace
	}
	return types.NamespacedName{Namespace: ns, Name: obj.Spec.ClusterDeploymentRef.Name}
}

// TemplateKey is where a class's ServiceTemplate reference points: its
// namespace, else the k0rdent system namespace that holds the catalog.
func TemplateKey(ref workspacesv1.ServiceTemplateRef) types.NamespacedName {
	ns := ref.Namespace
	if ns == "" {
		ns = k0rdentv1beta1.SystemNamespace
	}
	return types.NamespacedName{Namespace: ns, Name: ref.Name}
}

// NamespaceLabels are the labels of a workspace's namespace on its child
// cluster (the mesh adds its own).
func NamespaceLabels(obj *workspacesv1.WorkspaceDeployment) map[string]string {
	return map[string]string{
		WorkspaceLabel:               obj.Name,
		WorkspaceOwnerNamespaceLabel: naming.LabelValue(obj.Namespace),
		ManagedByLabel:               "apiary",
	}
}
