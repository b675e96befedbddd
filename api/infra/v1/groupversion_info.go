// Package v1 contains the infra.exalsius.ai/v1 API: the Colony, a set of
// k0rdent ClusterDeployments managed as one unit. Field names and JSON are
// those of the exalsius operator; Apiary adds fields without changing them.
//
// +kubebuilder:object:generate=true
// +groupName=infra.exalsius.ai
package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of the Colony API.
	GroupVersion = schema.GroupVersion{Group: "infra.exalsius.ai", Version: "v1"}

	// SchemeBuilder registers the Colony types.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the Colony types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
