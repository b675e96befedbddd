package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// ServiceSetKind is the kind of a ServiceSet.
	ServiceSetKind = "ServiceSet"

	// ServiceSetFinalizer is the finalizer the adapter keeps on a ServiceSet
	// until its Sveltos Profile is gone.
	ServiceSetFinalizer = "k0rdent.mirantis.com/service-set"

	// ServiceSetPausedAnnotation (any value) pauses the ServiceSet's Sveltos Profile.
	ServiceSetPausedAnnotation = "k0rdent.mirantis.com/service-set-paused"
)

// Condition types set on a ServiceSet. A ServiceSet has no Ready condition.
const (
	// ServiceSetProfileCondition reports the state of the Sveltos Profile.
	ServiceSetProfileCondition = "ServiceSetProfile"
	// ServiceSetStatusesCollectedCondition reports that service states were collected.
	ServiceSetStatusesCollectedCondition = "ServiceSetStatusesCollected"
	// ServiceSetServicesInReadyStateCondition counts the ServiceSet's ready
	// services, message "<ready>/<total>" (kcm v1.11 and later; the same
	// type as ServicesInReadyStateCondition on a ClusterDeployment).
	ServiceSetServicesInReadyStateCondition = ServicesInReadyStateCondition
	// ServiceSetHealthRulesCondition reports the evaluation of the health
	// rules that target the ServiceSet (kcm v1.12 and later).
	ServiceSetHealthRulesCondition = "ServiceSetHealthRules"
)

// ServiceSetSpec defines the desired state of ServiceSet.
type ServiceSetSpec struct {
	// Cluster is the name of the ClusterDeployment, in the ServiceSet's
	// namespace. It is empty only for a self-management ServiceSet.
	// +required
	Cluster string `json:"cluster"`

	// MultiClusterService is the name of the MultiClusterService.
	// +optional
	MultiClusterService string `json:"multiClusterService,omitempty"`

	// Provider is the definition of the provider to use to deploy services defined in the ServiceSet.
	// +required
	Provider StateManagementProviderConfig `json:"provider"`

	// Services is the list of services to deploy.
	// +optional
	Services []ServiceWithValues `json:"services,omitempty"`
}

// ServiceWithValues is a service of a ServiceSet.
type ServiceWithValues struct {
	// HelmOptions are the options to be passed to the provider for helm installation or updates.
	// +optional
	HelmOptions *ServiceHelmOptions `json:"helmOptions,omitempty"`

	// Version is the version of the service.
	// +optional
	Version *string `json:"version,omitempty"`

	// HelmAction specifies action on an helm chart.
	// +kubebuilder:validation:Enum:=Install;Uninstall
	// +optional
	HelmAction *string `json:"helmAction,omitempty"`

	// Name is the name of the service. If the ServiceTemplate is backed by Helm chart,
	// then the name is the name of the Helm release.
	// +required
	Name string `json:"name"`

	// Namespace is the namespace where the service is deployed. If the ServiceTemplate
	// is backed by Helm chart, then the namespace is the namespace where the Helm release is deployed.
	// +required
	Namespace string `json:"namespace"`

	// Template is the name of the ServiceTemplate to use to deploy the service,
	// in the ServiceSet's namespace.
	// +required
	Template string `json:"template"`

	// Values is the values to pass to the ServiceTemplate.
	// +optional
	Values string `json:"values,omitempty"`

	// ValuesFrom is the list of sources of the values to pass to the ServiceTemplate.
	// +optional
	ValuesFrom []ValuesFrom `json:"valuesFrom,omitempty"`
}

// ServiceSetStatus defines the observed state of ServiceSet.
type ServiceSetStatus struct {
	// Cluster contains [k8s.io/api/core/v1.ObjectReference] to the cluster object.
	// +optional
	Cluster *corev1.ObjectReference `json:"cluster,omitempty"`

	// Conditions is a list of conditions for the ServiceSet.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Services is a list of Service states in the ServiceSet.
	// +optional
	Services []ServiceState `json:"services,omitempty"`

	// Deployed is true if the ServiceSet has been deployed: every entry of
	// Services is Deployed (vacuously true with no entries).
	// +kubebuilder:default=false
	// +required
	Deployed bool `json:"deployed"`

	// Provider is the state of the provider.
	// +optional
	Provider ProviderState `json:"provider,omitempty"`
}

// ProviderState is the state of the provider.
type ProviderState struct {
	// Ready is true if the provider is ready.
	// +optional
	Ready bool `json:"ready,omitempty"`

	// Suspended is true if the provider is suspended.
	// +optional
	Suspended bool `json:"suspended,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced
// +kubebuilder:printcolumn:name="cluster",type=string,JSONPath=`.spec.cluster`,description="Corresponding ClusterDeployment name"
// +kubebuilder:printcolumn:name="multiClusterServer",type=string,JSONPath=`.spec.multiClusterService`,description="Corresponding MultiClusterService name"
// +kubebuilder:printcolumn:name="provider",type=string,JSONPath=`.spec.provider.name`,description="StateManagementProvider name"
// +kubebuilder:printcolumn:name="self-management",type=boolean,JSONPath=`.spec.provider.selfManagement`,description="Is the ServiceSet for self-management"
// +kubebuilder:printcolumn:name="age",type=date,JSONPath=`.metadata.creationTimestamp`,description="Time elapsed since object creation"

// ServiceSet is the Schema for the servicesets API
type ServiceSet struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec ServiceSetSpec `json:"spec,omitempty"`
	// +optional
	Status ServiceSetStatus `json:"status,omitempty"`
}

// GetConditions returns the ServiceSet's status conditions.
func (in *ServiceSet) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions sets the ServiceSet's status conditions.
func (in *ServiceSet) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// +kubebuilder:object:root=true

// ServiceSetList contains a list of ServiceSet.
type ServiceSetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ServiceSet `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ServiceSet{}, &ServiceSetList{})
}
