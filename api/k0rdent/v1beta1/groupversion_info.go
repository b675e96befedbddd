// Package v1beta1 holds wire-compatible Go types for the subset of the k0rdent
// (kcm) API group k0rdent.mirantis.com/v1beta1 that Apiary reads and writes:
// ClusterDeployment, ServiceSet, ServiceTemplate, ClusterTemplate, Credential
// and StateManagementProvider.
//
// The real module (github.com/K0rdent/kcm) cannot be fetched here, so these
// types mirror its JSON field names, required fields, enums and defaults
// (checked by test/kcmcompat against the kcm v1.8.0, v1.9.0, v1.11.4 and
// v1.12.0-rc2 CRDs). Flux- and Sveltos-typed sub-trees are kept as
// preserve-unknown JSON, so no Flux or Sveltos module is imported and a real
// object round-trips through these types without losing fields. Where
// releases differ, the types follow the most permissive schema and hold the
// newest fields (the Deleted service state and lastDeployedHash of v1.12),
// which older releases never send.
//
// The CRDs generated from these types are for tests only; a real cluster runs
// kcm's own CRDs.
//
// +kubebuilder:object:generate=true
// +groupName=k0rdent.mirantis.com
package v1beta1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of the k0rdent API.
	GroupVersion = schema.GroupVersion{Group: "k0rdent.mirantis.com", Version: "v1beta1"}

	// SchemeBuilder registers the k0rdent types.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the k0rdent types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
