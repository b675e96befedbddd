package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// StateManagementProviderKind is the kind of a StateManagementProvider.
	StateManagementProviderKind = "StateManagementProvider"
)

// Condition types set on a StateManagementProvider.
const (
	StateManagementProviderRBACCondition            = "RBACReady"
	StateManagementProviderAdapterCondition         = "AdapterReady"
	StateManagementProviderProvisionerCondition     = "ProvisionerReady"
	StateManagementProviderProvisionerCRDsCondition = "ProvisionerCRDsReady"
)

// StateManagementProviderSpec defines the desired state of StateManagementProvider.
type StateManagementProviderSpec struct {
	// Selector is label selector to be used to filter the [ServiceSet] objects to be reconciled.
	// +required
	Selector *metav1.LabelSelector `json:"selector"`

	// Adapter is an operator with translates the k0rdent API objects into provider-specific API objects.
	// It is represented as a reference to operator object.
	// +required
	Adapter ResourceReference `json:"adapter"`

	// Provisioner is a set of resources required for the provider to operate. These resources
	// reconcile provider-specific API objects. It is represented as a list of references to
	// provider's objects. Send an empty list rather than nil: the field is required.
	// +required
	Provisioner []ResourceReference `json:"provisioner"`

	// ProvisionerCRDs is a set of references to provider-specific CustomResourceDefinition objects,
	// which are required for the provider to operate. Send an empty list rather
	// than nil: the field is required.
	// +required
	ProvisionerCRDs []ProvisionerCRD `json:"provisionerCRDs"`

	// Suspend suspends the StateManagementProvider. Suspending a StateManagementProvider
	// will prevent the adapter from reconciling any resources.
	// +kubebuilder:default:=false
	// +required
	Suspend bool `json:"suspend"`
}

// ResourceReference is a cross-namespace reference to a resource.
type ResourceReference struct {
	// APIVersion is the API version of the resource.
	// +required
	APIVersion string `json:"apiVersion"`

	// Kind is the kind of the resource.
	// +required
	Kind string `json:"kind"`

	// Name is the name of the resource.
	// +required
	Name string `json:"name"`

	// Namespace is the namespace of the resource.
	// +required
	Namespace string `json:"namespace"`

	// ReadinessRule is a CEL expression that evaluates to true when the resource is ready.
	// +required
	ReadinessRule string `json:"readinessRule"`
}

// ProvisionerCRD is a GVRs for a custom resource reconciled by provisioners.
type ProvisionerCRD struct {
	// Group is the API group of the resources.
	// +required
	Group string `json:"group"`

	// Version is the API version of the resources.
	// +required
	Version string `json:"version"`

	// Resources is the list of resources under given APIVersion.
	// +required
	Resources []string `json:"resources"`
}

// StateManagementProviderStatus defines the observed state of StateManagementProvider.
type StateManagementProviderStatus struct {
	// Conditions is a list of conditions for the state management provider.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Ready is true if the state management provider is ready.
	// +required
	Ready bool `json:"ready"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=smp
// +kubebuilder:printcolumn:name="rbac",type="string",JSONPath=`.status.conditions[?(@.type=="RBACReady")].status`,description="Shows readiness of RBAC objects"
// +kubebuilder:printcolumn:name="adapter",type="string",JSONPath=`.status.conditions[?(@.type=="AdapterReady")].status`,description="Shows readiness of adapter"
// +kubebuilder:printcolumn:name="provisioner",type="string",JSONPath=`.status.conditions[?(@.type=="ProvisionerReady")].status`,description="Shows readiness of provisioner"
// +kubebuilder:printcolumn:name="provisioner crds",type="string",JSONPath=`.status.conditions[?(@.type=="ProvisionerCRDsReady")].status`,description="Shows readiness of required custom resources"
// +kubebuilder:printcolumn:name="ready",type="boolean",JSONPath=`.status.ready`,description="Shows readiness of provider"
// +kubebuilder:printcolumn:name="suspended",type="boolean",JSONPath=`.spec.suspend`,description="Shows whether provider is suspended"
// +kubebuilder:printcolumn:name="age",type=date,JSONPath=`.metadata.creationTimestamp`,description="Time elapsed since object creation"

// StateManagementProvider is the Schema for the statemanagementproviders API
type StateManagementProvider struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec StateManagementProviderSpec `json:"spec,omitempty"`
	// +optional
	Status StateManagementProviderStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// StateManagementProviderList contains a list of StateManagementProvider.
type StateManagementProviderList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []StateManagementProvider `json:"items"`
}

func init() {
	SchemeBuilder.Register(&StateManagementProvider{}, &StateManagementProviderList{})
}
