// Package v1alpha1 contains the quota.apiary.dev/v1alpha1 API: TenantQuota,
// a cluster-scoped cap on what the namespaces of one tenant may hold across
// all clusters — workspaces, GPUs per resource (optionally of one GPU model
// or node selector), CPU and memory. It is Apiary's own group: the exalsius
// operator has no quotas.
//
// +kubebuilder:object:generate=true
// +groupName=quota.apiary.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of the quota API.
	GroupVersion = schema.GroupVersion{Group: "quota.apiary.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the quota types.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the quota types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
