package v1beta1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// ServiceTemplateKind is the kind of a ServiceTemplate.
	ServiceTemplateKind = "ServiceTemplate"
	// ClusterTemplateKind is the kind of a ClusterTemplate.
	ClusterTemplateKind = "ClusterTemplate"

	// ChartAnnotationKubernetesVersion is the chart annotation a ClusterTemplate
	// takes its status.k8sVersion from.
	ChartAnnotationKubernetesVersion = "k0rdent.mirantis.com/k8s-version"
	// ChartAnnotationKubernetesConstraint is the chart annotation a
	// ServiceTemplate takes its status.k8sConstraint from.
	ChartAnnotationKubernetesConstraint = "k0rdent.mirantis.com/k8s-version-constraint"
)

// Deployment types of a SourceSpec.
const (
	SourceDeploymentTypeLocal  = "Local"
	SourceDeploymentTypeRemote = "Remote"
)

// HelmSpec references the Helm chart of a template: exactly one of
// ChartSpec, ChartRef and ChartSource is set.
// +kubebuilder:validation:XValidation:rule="(has(self.chartSpec) ? (!has(self.chartSource) && !has(self.chartRef)): true)",message="chartSpec, chartSource and chartRef are mutually exclusive"
// +kubebuilder:validation:XValidation:rule="(has(self.chartSource) ? (!has(self.chartSpec) && !has(self.chartRef)): true)",message="chartSpec, chartSource and chartRef are mutually exclusive"
// +kubebuilder:validation:XValidation:rule="(has(self.chartRef) ? (!has(self.chartSpec) && !has(self.chartSource)): true)",message="chartSpec, chartSource and chartRef are mutually exclusive"
// +kubebuilder:validation:XValidation:rule="has(self.chartSpec) || has(self.chartRef) || has(self.chartSource)",message="one of chartSpec, chartRef or chartSource must be set"
type HelmSpec struct {
	// ChartSpec defines the desired state of the HelmChart to be created by the
	// controller: a Flux source.toolkit.fluxcd.io/v1 HelmChartSpec (chart,
	// interval and sourceRef are required; version, reconcileStrategy,
	// valuesFiles, ignoreMissingValuesFiles, suspend, verify).
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	ChartSpec *apiextensionsv1.JSON `json:"chartSpec,omitempty"`

	// ChartRef is a reference to a source controller resource containing the
	// Helm chart representing the template: a Flux CrossNamespaceSourceReference
	// (kind: OCIRepository|HelmChart|ExternalArtifact and name required; apiVersion, namespace).
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	ChartRef *apiextensionsv1.JSON `json:"chartRef,omitempty"`

	// ChartSource is a source of a Helm chart representing the template.
	// +kubebuilder:validation:XValidation:rule="has(self.localSourceRef) ? (self.localSourceRef.kind != 'Secret' && self.localSourceRef.kind != 'ConfigMap'): true",message="Secret and ConfigMap are not supported as Helm chart sources"
	// +optional
	ChartSource *SourceSpec `json:"chartSource,omitempty"`
}

// SourceSpec is the source of a template's manifests or chart: either a
// local source reference or a remote source spec.
// +kubebuilder:validation:XValidation:rule="has(self.localSourceRef) ? !has(self.remoteSourceSpec): true",message="LocalSource and RemoteSource are mutually exclusive."
// +kubebuilder:validation:XValidation:rule="has(self.remoteSourceSpec) ? !has(self.localSourceRef): true",message="LocalSource and RemoteSource are mutually exclusive."
// +kubebuilder:validation:XValidation:rule="has(self.localSourceRef) || has(self.remoteSourceSpec)",message="One of LocalSource or RemoteSource must be specified."
type SourceSpec struct {
	// LocalSourceRef is the local source of the kustomize manifest.
	// +optional
	LocalSourceRef *LocalSourceRef `json:"localSourceRef,omitempty"`

	// RemoteSourceSpec is the remote source of the kustomize manifest.
	// +optional
	RemoteSourceSpec *RemoteSourceSpec `json:"remoteSourceSpec,omitempty"`

	// DeploymentType is the type of the deployment. This field is ignored,
	// when ResourceSpec is used as part of Helm chart configuration.
	// The server defaults it to Remote when omitted.
	// +kubebuilder:validation:Enum=Local;Remote
	// +kubebuilder:default:=Remote
	// +required
	DeploymentType string `json:"deploymentType,omitempty"`

	// Path to the directory containing the resource manifest
	// (required by the kcm v1.8.0 schema, optional since v1.9.0).
	// +optional
	Path string `json:"path,omitempty"`
}

// LocalSourceRef is a reference to a local source of a template.
type LocalSourceRef struct {
	// Kind is the kind of the local source.
	// +kubebuilder:validation:Enum=ConfigMap;Secret;GitRepository;Bucket;OCIRepository
	// +required
	Kind string `json:"kind"`

	// Name is the name of the local source.
	// +required
	Name string `json:"name"`

	// Namespace is the namespace of the local source. Cross-namespace references
	// are only allowed when the Kind is one of GitRepository, Bucket or OCIRepository.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// RemoteSourceSpec is a remote source of a template: exactly one of Git,
// Bucket and OCI, each the spec of the Flux source object kcm creates.
// +kubebuilder:validation:XValidation:rule="has(self.git) ? (!has(self.bucket) && !has(self.oci)) : true",message="Git, Bucket and OCI are mutually exclusive."
// +kubebuilder:validation:XValidation:rule="has(self.bucket) ? (!has(self.git) && !has(self.oci)) : true",message="Git, Bucket and OCI are mutually exclusive."
// +kubebuilder:validation:XValidation:rule="has(self.oci) ? (!has(self.git) && !has(self.bucket)) : true",message="Git, Bucket and OCI are mutually exclusive."
// +kubebuilder:validation:XValidation:rule="has(self.git) || has(self.bucket) || has(self.oci)",message="One of Git, Bucket or OCI must be specified."
type RemoteSourceSpec struct {
	// Git is the definition of git repository source (Flux GitRepositorySpec).
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Git *apiextensionsv1.JSON `json:"git,omitempty"`

	// Bucket is the definition of bucket source (Flux BucketSpec).
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Bucket *apiextensionsv1.JSON `json:"bucket,omitempty"`

	// OCI is the definition of OCI repository source (Flux OCIRepositorySpec).
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	OCI *apiextensionsv1.JSON `json:"oci,omitempty"`
}

// TemplateStatusCommon holds the status fields shared by templates.
type TemplateStatusCommon struct {
	// Config demonstrates available parameters for template customization,
	// that can be used when creating ClusterDeployment objects.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Config *apiextensionsv1.JSON `json:"config,omitempty"`

	// ChartRef is a reference to a source controller resource containing the
	// Helm chart representing the template (a Flux CrossNamespaceSourceReference;
	// kind HelmChart for templates with a chartSpec).
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	ChartRef *apiextensionsv1.JSON `json:"chartRef,omitempty"`

	// SchemaConfigMapName specifies the name of the ConfigMap that contains the
	// JSON Schema definition for Helm Chart validation.
	// +optional
	SchemaConfigMapName string `json:"schemaConfigMapName,omitempty"`

	// Description contains information about the template.
	// +optional
	Description string `json:"description,omitempty"`

	// ChartVersion represents the version of the Helm Chart associated with this template.
	// +optional
	ChartVersion string `json:"chartVersion,omitempty"`

	// ValidationError provides information regarding issues encountered during template validation.
	// +optional
	ValidationError string `json:"validationError,omitempty"`

	// Valid indicates whether the template passed validation or not.
	// It is the template's readiness signal.
	// +required
	Valid bool `json:"valid"`

	// ObservedGeneration is the last observed generation.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// ServiceTemplateSpec defines the desired state of ServiceTemplate.
// Exactly one of Helm, Kustomize and Resources is set.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="Spec is immutable"
// +kubebuilder:validation:XValidation:rule="has(self.helm) ? (!has(self.kustomize) && !has(self.resources)): true",message="Helm, Kustomize and Resources are mutually exclusive."
// +kubebuilder:validation:XValidation:rule="has(self.kustomize) ? (!has(self.helm) && !has(self.resources)): true",message="Helm, Kustomize and Resources are mutually exclusive."
// +kubebuilder:validation:XValidation:rule="has(self.resources) ? (!has(self.kustomize) && !has(self.helm)): true",message="Helm, Kustomize and Resources are mutually exclusive."
// +kubebuilder:validation:XValidation:rule="has(self.helm) || has(self.kustomize) || has(self.resources)",message="One of Helm, Kustomize, or Resources must be specified."
type ServiceTemplateSpec struct {
	// Helm contains the Helm chart information for the template.
	// +optional
	Helm *HelmSpec `json:"helm,omitempty"`

	// Kustomize contains the Kustomize configuration for the template.
	// +optional
	Kustomize *SourceSpec `json:"kustomize,omitempty"`

	// Resources contains the resource configuration for the template.
	// +optional
	Resources *SourceSpec `json:"resources,omitempty"`

	// HelmOptions are the global options to use when installing or updating the helm chart.
	// +optional
	HelmOptions *ServiceHelmOptions `json:"helmOptions,omitempty"`

	// Version is the semantic version of the application backed by template.
	// +optional
	Version string `json:"version,omitempty"`

	// Constraint describing compatible K8S versions of the cluster set in the SemVer format.
	// +optional
	KubernetesConstraint string `json:"k8sConstraint,omitempty"`
}

// ServiceTemplateStatus defines the observed state of ServiceTemplate.
type ServiceTemplateStatus struct {
	// Constraint describing compatible K8S versions of the cluster set in the SemVer format.
	// +optional
	KubernetesConstraint string `json:"k8sConstraint,omitempty"`

	// SourceStatus reflects the status of the source (kustomize, resources or helm.chartSource).
	// +optional
	SourceStatus *SourceStatus `json:"sourceStatus,omitempty"`

	TemplateStatusCommon `json:",inline"`
}

// SourceStatus reflects the status of the Flux source of a template.
type SourceStatus struct {
	// Artifact is the artifact that was generated from the template source
	// (a Flux meta.Artifact: digest, lastUpdateTime, path, revision, url are
	// required; size, metadata).
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Artifact *apiextensionsv1.JSON `json:"artifact,omitempty"`

	// Kind is the kind of the remote source.
	// +required
	Kind string `json:"kind"`

	// Name is the name of the remote source.
	// +required
	Name string `json:"name"`

	// Namespace is the namespace of the remote source.
	// +required
	Namespace string `json:"namespace"`

	// Conditions reflects the conditions of the remote source object.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ObservedGeneration is the latest source generation observed by the controller.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=svctmpl
// +kubebuilder:printcolumn:name="valid",type="boolean",JSONPath=".status.valid",description="Valid"
// +kubebuilder:printcolumn:name="validationError",type="string",JSONPath=".status.validationError",description="Validation Error",priority=1
// +kubebuilder:printcolumn:name="description",type="string",JSONPath=".status.description",description="Description",priority=1

// ServiceTemplate is the Schema for the servicetemplates API
type ServiceTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec ServiceTemplateSpec `json:"spec,omitempty"`
	// +optional
	Status ServiceTemplateStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ServiceTemplateList contains a list of ServiceTemplate.
type ServiceTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ServiceTemplate `json:"items"`
}

// ClusterTemplateSpec defines the desired state of ClusterTemplate.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="Spec is immutable"
// +kubebuilder:validation:XValidation:rule="!has(self.helm.chartSource)",message=".spec.helm.chartSource is not supported for ClusterTemplates"
type ClusterTemplateSpec struct {
	// HelmSpec references a Helm chart representing the KCM template.
	// +required
	Helm HelmSpec `json:"helm"`

	// Holds key-value pairs with compatibility contract versions,
	// where the key is the name of the provider,
	// and the value is the provider contract version
	// required to be supported by the provider.
	// +optional
	ProviderContracts map[string]string `json:"providerContracts,omitempty"`

	// Kubernetes exact version in the SemVer format provided by this ClusterTemplate.
	// +optional
	KubernetesVersion string `json:"k8sVersion,omitempty"`

	// Providers represent required CAPI providers.
	// Should be set if not present in the Helm chart metadata.
	// +optional
	Providers []string `json:"providers,omitempty"`
}

// ClusterTemplateStatus defines the observed state of ClusterTemplate.
type ClusterTemplateStatus struct {
	// Holds key-value pairs with compatibility contract versions,
	// where the key is the name of the provider,
	// and the value is the provider contract version
	// required to be supported by the provider.
	// +optional
	ProviderContracts map[string]string `json:"providerContracts,omitempty"`

	// Kubernetes exact version in the SemVer format provided by this ClusterTemplate.
	// +optional
	KubernetesVersion string `json:"k8sVersion,omitempty"`

	// Providers represent required CAPI providers.
	// +optional
	Providers []string `json:"providers,omitempty"`

	TemplateStatusCommon `json:",inline"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,shortName=clustertmpl
// +kubebuilder:printcolumn:name="valid",type="boolean",JSONPath=".status.valid",description="Valid"
// +kubebuilder:printcolumn:name="validationError",type="string",JSONPath=".status.validationError",description="Validation Error",priority=1
// +kubebuilder:printcolumn:name="description",type="string",JSONPath=".status.description",description="Description",priority=1

// ClusterTemplate is the Schema for the clustertemplates API
type ClusterTemplate struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +optional
	Spec ClusterTemplateSpec `json:"spec,omitempty"`
	// +optional
	Status ClusterTemplateStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ClusterTemplateList contains a list of ClusterTemplate.
type ClusterTemplateList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterTemplate `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ServiceTemplate{}, &ServiceTemplateList{})
	SchemeBuilder.Register(&ClusterTemplate{}, &ClusterTemplateList{})
}
