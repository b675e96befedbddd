// Package v1 contains the workspaces.exalsius.ai/v1 API: the WorkspaceClass
// catalog and the WorkspaceDeployment that asks for one workspace on one
// k0rdent ClusterDeployment. Field names and JSON are those of the exalsius
// operator; Apiary adds fields without changing them.
//
// +kubebuilder:object:generate=true
// +groupName=workspaces.exalsius.ai
package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of the workspaces API.
	GroupVersion = schema.GroupVersion{Group: "workspaces.exalsius.ai", Version: "v1"}

	// SchemeBuilder registers the workspaces types.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the workspaces types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
