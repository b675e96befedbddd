package v1beta1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// ClusterDeploymentKind is the kind of a ClusterDeployment.
	ClusterDeploymentKind = "ClusterDeployment"

	// ClusterDeploymentFinalizer is the finalizer kcm keeps on a ClusterDeployment.
	ClusterDeploymentFinalizer = "k0rdent.mirantis.com/cluster-deployment"

	// KubeconfigSecretSuffix is appended to a ClusterDeployment's name to get the
	// name of its child cluster's kubeconfig Secret (CAPI convention), in the
	// ClusterDeployment's namespace.
	KubeconfigSecretSuffix = "-kubeconfig"
	// KubeconfigSecretKey is the data key of the kubeconfig in that Secret.
	KubeconfigSecretKey = "value"
)

// ClusterDeploymentSpec defines the desired state of ClusterDeployment.
type ClusterDeploymentSpec struct {
	// Config allows to provide parameters for template customization.
	// If no Config provided, the field will be populated with the default values for
	// the template and DryRun will be enabled. Send a non-nil value (even {})
	// to avoid that.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Config *apiextensionsv1.JSON `json:"config,omitempty"`

	// IPAMClaim defines IP Address Management (IPAM) requirements for the cluster.
	// It can either reference an existing IPAM claim or specify an inline claim.
	// +optional
	IPAMClaim *ClusterIPAMClaimType `json:"ipamClaim,omitempty"`

	// PropagateCredentials indicates whether credentials should be propagated
	// for use by CCM (Cloud Controller Manager). Nil means the default, true.
	// +kubebuilder:default:=true
	// +optional
	PropagateCredentials *bool `json:"propagateCredentials,omitempty"`

	// Template is a reference to a Template object located in the same namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Template string `json:"template"`

	// Name reference to the related [Credential] object located in the same namespace.
	// +optional
	Credential string `json:"credential,omitempty"`

	// Name reference to the related [ClusterAuthentication] object.
	// +optional
	ClusterAuth string `json:"clusterAuth,omitempty"`

	// DataSource is the name reference to the related [DataSource] object located in the same namespace.
	// +optional
	DataSource string `json:"dataSource,omitempty"`

	// AuditPolicy is the name of a ClusterAuditPolicy in the same namespace
	// (kcm v1.11 and later).
	// +optional
	AuditPolicy string `json:"auditPolicy,omitempty"`

	// ServiceSpec is spec related to deployment of services.
	// +optional
	ServiceSpec ServiceSpec `json:"serviceSpec,omitempty"`

	// DryRun specifies whether the template should be applied after validation or only validated.
	// +optional
	DryRun bool `json:"dryRun,omitempty"`

	// CleanupOnDeletion specifies whether potentially orphaned Services and PVCs
	// should be removed during the object deletion.
	// This is a best-effort cleanup, if there is no possibility to acquire
	// a managed cluster's kubeconfig, the cleanup will NOT happen.
	// +optional
	CleanupOnDeletion bool `json:"cleanupOnDeletion,omitempty"`
}

// ClusterIPAMClaimType references an existing ClusterIPAMClaim or defines one inline.
type ClusterIPAMClaimType struct {
	// ClusterIPAMClaimRef is the name of an existing ClusterIPAMClaim resource to use.
	// +optional
	ClusterIPAMClaimRef string `json:"ref,omitempty"`

	// ClusterIPAMClaimSpec defines the inline IPAM claim specification if no reference is provided
	// (kcm ClusterIPAMClaimSpec: provider (required; in-cluster|ipam-infoblox), cluster,
	// clusterIPAMRef, nodeNetwork, clusterNetwork, externalNetwork).
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	ClusterIPAMClaimSpec *apiextensionsv1.JSON `json:"spec,omitempty"`
}

// ClusterDeploymentStatus defines the observed state of ClusterDeployment.
type ClusterDeploymentStatus struct {
	// Services contains details for the state of services: the status.services
	// of every ServiceSet in the namespace whose spec.cluster is this object.
	// +optional
	Services []ServiceState `json:"services,omitempty"`

	// ServicesUpgradePaths contains details for the state of services upgrade paths.
	// +optional
	ServicesUpgradePaths []ServiceUpgradePaths `json:"servicesUpgradePaths,omitempty"`

	// Currently compatible exact Kubernetes version of the cluster. Being set only if
	// provided by the corresponding ClusterTemplate.
	// +optional
	KubernetesVersion string `json:"k8sVersion,omitempty"`

	// Region shows the region the [ClusterDeployment] targets.
	// +optional
	Region string `json:"region,omitempty"`

	// Conditions contains details for the current state of the ClusterDeployment.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// AvailableUpgrades is the list of ClusterTemplate names to which
	// this cluster can be upgraded. It can be an empty array, which means no upgrades are
	// available.
	// +optional
	AvailableUpgrades []string `json:"availableUpgrades,omitempty"`

	// ObservedGeneration is the last observed generation.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// ServiceUpgradePaths contains details for the state of service upgrade paths.
type ServiceUpgradePaths struct {
	// Name is the name of the service.
	// +required
	Name string `json:"name"`

	// Namespace is the namespace of the service.
	// +required
	Namespace string `json:"namespace"`

	// Template is the name of the current service template.
	// +required
	Template string `json:"template"`

	// AvailableUpgrades contains details for the state of available upgrades.
	// +optional
	AvailableUpgrades []UpgradePath `json:"availableUpgrades,omitempty"`
}

// UpgradePath contains details for the state of service upgrade paths.
type UpgradePath struct {
	// Deprecated: use Versions to define versions that service can be upgraded to.
	// +optional
	UpgradePaths []string `json:"upgradePaths,omitempty"`

	// Versions contains the list of versions that service can be upgraded to.
	// +optional
	Versions []AvailableUpgrade `json:"versions,omitempty"`
}

// AvailableUpgrade is the definition of the available upgrade for the Template.
type AvailableUpgrade struct {
	// Name is the name of the Template to which the upgrade is available.
	// +required
	Name string `json:"name"`

	// Version is the version of the Template to which the upgrade is available
	// (required by the kcm v1.8.0 schema, optional since v1.9.0).
	// +optional
	Version string `json:"version,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=clusterd;cld
// +kubebuilder:printcolumn:name="Ready",type="string",JSONPath=`.status.conditions[?(@.type=="Ready")].status`,description="Shows readiness of the ClusterDeployment"
// +kubebuilder:printcolumn:name="Services",type="string",JSONPath=`.status.conditions[?(@.type=="ServicesInReadyState")].message`,description="Number of ready out of total services"
// +kubebuilder:printcolumn:name="Template",type="string",JSONPath=`.spec.template`,description="ClusterTemplate used for the ClusterDeployment"
// +kubebuilder:printcolumn:name="Messages",type="string",JSONPath=`.status.conditions[?(@.type=="Ready")].message`,description="Shows either readiness or error messages from child objects"
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=`.metadata.creationTimestamp`,description="Time elapsed since object creation"
// +kubebuilder:printcolumn:name="DryRun",type="string",JSONPath=`.spec.dryRun`,description="Dry Run",priority=1

// ClusterDeployment is the Schema for the ClusterDeployments API
type ClusterDeployment struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec ClusterDeploymentSpec `json:"spec"`
	// +optional
	Status ClusterDeploymentStatus `json:"status,omitempty"`
}

// GetConditions returns the ClusterDeployment's status conditions.
func (in *ClusterDeployment) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions sets the ClusterDeployment's status conditions.
func (in *ClusterDeployment) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// +kubebuilder:object:root=true

// ClusterDeploymentList contains a list of ClusterDeployment.
type ClusterDeploymentList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterDeployment `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ClusterDeployment{}, &ClusterDeploymentList{})
}
