package v1

import (
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
)

// ColonyFinalizer is the finalizer the Colony controller keeps on a Colony
// until its ClusterDeployments are gone. It is the exalsius operator's name,
// so Colonies move between the two controllers.
const ColonyFinalizer = "colony.infra.exalsius.ai/finalizer"

// ColonyLabel is set on every object rendered for a Colony, with the Colony's name.
const ColonyLabel = "infra.exalsius.ai/colony"

// ColonySpec lists the clusters of a Colony.
type ColonySpec struct {
	// ColonyClusters are the clusters to create; each becomes a k0rdent
	// ClusterDeployment named <colony>-<clusterName>.
	// +listType=map
	// +listMapKey=clusterName
	// +kubebuilder:validation:MaxItems=1000
	// +optional
	ColonyClusters []ColonyCluster `json:"colonyClusters,omitempty"`

	// Suspend stops the reconciliation of the Colony; deletion still proceeds.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// ColonyCluster is one cluster of a Colony.
type ColonyCluster struct {
	// ClusterName is the logical name of the cluster, a DNS-1123 label.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	ClusterName string `json:"clusterName"`

	// ClusterDeploymentSpec is a k0rdent ClusterDeploymentSpec given verbatim
	// (template, credential, config, serviceSpec, ...). An entry without it
	// and without values creates no ClusterDeployment.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:Type=object
	// +optional
	ClusterDeploymentSpec *runtime.RawExtension `json:"clusterDeploymentSpec,omitempty"`

	// ClusterLabels are set on the ClusterDeployment.
	// +optional
	ClusterLabels map[string]string `json:"clusterLabels,omitempty"`

	// ClusterAnnotations are set on the ClusterDeployment.
	// +optional
	ClusterAnnotations map[string]string `json:"clusterAnnotations,omitempty"`

	// Bundle selects the template bundle that renders this cluster's objects;
	// the default is the built-in colony-cluster bundle.
	// +optional
	Bundle *commonv1.BundleReference `json:"bundle,omitempty"`

	// Values are passed to the bundle, merged over its values.yaml.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Values *apiextensionsv1.JSON `json:"values,omitempty"`
}

// ColonyPhase summarises the state of a Colony.
// +kubebuilder:validation:Enum=Pending;Provisioning;Ready;Degraded;Failed;Deleting
type ColonyPhase string

// Colony phases.
const (
	ColonyPhasePending      ColonyPhase = "Pending"
	ColonyPhaseProvisioning ColonyPhase = "Provisioning"
	ColonyPhaseReady        ColonyPhase = "Ready"
	ColonyPhaseDegraded     ColonyPhase = "Degraded"
	ColonyPhaseFailed       ColonyPhase = "Failed"
	ColonyPhaseDeleting     ColonyPhase = "Deleting"
)

// ColonyStatus is the observed state of a Colony.
type ColonyStatus struct {
	// ObservedGeneration is the last generation the controller acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Phase summarises the state of the Colony's clusters.
	// +optional
	Phase ColonyPhase `json:"phase,omitempty"`

	// Conditions: Ready, Reconciling, Stalled, ClustersReady and domain conditions.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ClusterDeploymentRefs are the ClusterDeployments the Colony created.
	// +optional
	ClusterDeploymentRefs []*corev1.ObjectReference `json:"clusterDeploymentRefs,omitempty"`

	// TotalClusters is the number of clusters in the spec that create a ClusterDeployment.
	TotalClusters int32 `json:"totalClusters"`

	// ReadyClusters is the number of those clusters whose ClusterDeployment is ready.
	ReadyClusters int32 `json:"readyClusters"`

	// Clusters reports each cluster of the spec.
	// +listType=map
	// +listMapKey=clusterName
	// +optional
	Clusters []ColonyClusterStatus `json:"clusters,omitempty"`

	// KubeconfigSecretName is the Secret that aggregates the references to
	// the clusters' kubeconfig Secrets, one key per ClusterDeployment.
	// +optional
	KubeconfigSecretName string `json:"kubeconfigSecretName,omitempty"`

	// GPUInventory maps ClusterDeployment names to the GPUs their nodes offer.
	// +optional
	GPUInventory map[string]ClusterGPUInventory `json:"gpuInventory,omitempty"`

	// Delivery reports the objects delivered for the Colony.
	// +optional
	Delivery *commonv1.DeliveryStatus `json:"delivery,omitempty"`

	// LastHandledReconcileAt is the last reconcile.fluxcd.io/requestedAt
	// annotation value the controller handled.
	// +optional
	LastHandledReconcileAt string `json:"lastHandledReconcileAt,omitempty"`
}

// ColonyClusterStatus is the observed state of one cluster of a Colony.
type ColonyClusterStatus struct {
	// ClusterName is the entry's clusterName.
	ClusterName string `json:"clusterName"`

	// ClusterDeploymentName is the name of the entry's ClusterDeployment.
	// +optional
	ClusterDeploymentName string `json:"clusterDeploymentName,omitempty"`

	// Ready is true when the ClusterDeployment reports Ready for its current generation.
	Ready bool `json:"ready"`

	// Reason is a CamelCase word for the cluster's state.
	// +optional
	Reason string `json:"reason,omitempty"`

	// Message explains the cluster's state.
	// +optional
	Message string `json:"message,omitempty"`
}

// ClusterGPUInventory is the GPU inventory of one child cluster.
type ClusterGPUInventory struct {
	// LastUpdated is the time of the last successful scan.
	// +optional
	LastUpdated *metav1.Time `json:"lastUpdated,omitempty"`

	// Offerings are the distinct GPU offerings of the cluster's schedulable nodes.
	// +optional
	Offerings []GPUOffering `json:"offerings,omitempty"`

	// ScanError is the error of the last scan, when it failed; the offerings
	// are then those of the last successful scan.
	// +optional
	ScanError string `json:"scanError,omitempty"`
}

// GPUOffering is one kind of GPU a cluster offers, with the selector that places on it.
type GPUOffering struct {
	// Model is the best-effort model name: the exalsius.ai/gpu-model label,
	// else a vendor product label, else empty.
	// +optional
	Model string `json:"model,omitempty"`

	// Selector is the exact node-label selector that picks this offering.
	// +optional
	Selector map[string]string `json:"selector,omitempty"`

	// Vendor is NVIDIA or AMD, or the value of the exalsius.ai/gpu-vendor label.
	Vendor string `json:"vendor"`

	// ResourceName is the extended resource, nvidia.com/gpu or amd.com/gpu.
	ResourceName string `json:"resourceName"`

	// Total is the sum of the allocatable resource over the offering's nodes.
	Total int64 `json:"total"`

	// Nodes is the number of nodes that carry the offering.
	Nodes int32 `json:"nodes"`

	// Labels are the GPU-related labels of the first node of the offering.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready Clusters",type=integer,JSONPath=`.status.readyClusters`
// +kubebuilder:printcolumn:name="Total Clusters",type=integer,JSONPath=`.status.totalClusters`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`,priority=1
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// Colony is a set of k0rdent ClusterDeployments managed as one unit, with an
// aggregated kubeconfig Secret and a live GPU inventory.
type Colony struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ColonySpec `json:"spec,omitempty"`
	// Status is written by Apiary. Until then it holds observedGeneration -1
	// (as Flux's kinds do), so kstatus reads a new object as in progress.
	// +kubebuilder:default={"observedGeneration":-1,"totalClusters":0,"readyClusters":0}
	Status ColonyStatus `json:"status,omitempty"`
}

// GetConditions returns the Colony's status conditions.
func (in *Colony) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions sets the Colony's status conditions.
func (in *Colony) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// +kubebuilder:object:root=true

// ColonyList is a list of Colonies.
type ColonyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Colony `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Colony{}, &ColonyList{})
}
