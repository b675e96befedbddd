package v1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
)

// WorkspaceClassFinalizer keeps a WorkspaceClass while workspaces use it.
const WorkspaceClassFinalizer = "workspaces.exalsius.ai/class-in-use"

// ServiceTemplateRef points at a k0rdent ServiceTemplate.
type ServiceTemplateRef struct {
	// Name of the ServiceTemplate.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Namespace of the ServiceTemplate; kcm-system when unset.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// VersionConstraint is a SemVer constraint on the template's version.
	// +optional
	VersionConstraint string `json:"versionConstraint,omitempty"`
}

// PrerequisiteSpec is a service that must be healthy on the target cluster
// before the workspace is deployed. It is installed once per cluster and
// shared by every workspace that needs it.
type PrerequisiteSpec struct {
	// ServiceTemplate to install.
	// +required
	ServiceTemplate ServiceTemplateRef `json:"serviceTemplate"`

	// Namespace on the child cluster; "default" when unset. Set it only to
	// insist on a namespace: a prerequisite already installed elsewhere then
	// fails the workspace instead of being shared.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Values are the Helm values of the prerequisite's release.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Values *apiextensionsv1.JSON `json:"values,omitempty"`
}

// AccessProtocol is how an access endpoint is reached.
// +kubebuilder:validation:Enum=HTTP;TCP;SSH
type AccessProtocol string

// Access protocols.
const (
	AccessProtocolHTTP AccessProtocol = "HTTP"
	AccessProtocolTCP  AccessProtocol = "TCP"
	AccessProtocolSSH  AccessProtocol = "SSH"
)

// AccessEndpoint is a network endpoint a workspace exposes.
type AccessEndpoint struct {
	// Name of the endpoint; also the route name.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Protocol of the endpoint: HTTP is routed by host name, TCP and SSH by port.
	// +required
	Protocol AccessProtocol `json:"protocol"`

	// Port of the Service on the child cluster.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port"`

	// ServiceName overrides the conventional Service name <release>-<endpoint>.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	ServiceName string `json:"serviceName,omitempty"`

	// Description is shown to users.
	// +optional
	Description string `json:"description,omitempty"`
}

// UserFacingConfigType is the input type of a user-facing setting.
// +kubebuilder:validation:Enum=string;int;bool;secret;publicKey
type UserFacingConfigType string

// User-facing setting types.
const (
	UserFacingConfigString    UserFacingConfigType = "string"
	UserFacingConfigInt       UserFacingConfigType = "int"
	UserFacingConfigBool      UserFacingConfigType = "bool"
	UserFacingConfigSecret    UserFacingConfigType = "secret"
	UserFacingConfigPublicKey UserFacingConfigType = "publicKey"
)

// UserFacingConfigField is a Helm value a user is prompted for.
type UserFacingConfigField struct {
	// HelmValuePath is the dot path of the value.
	// +required
	// +kubebuilder:validation:MinLength=1
	HelmValuePath string `json:"helmValuePath"`

	// DisplayName is the prompt's label.
	// +required
	// +kubebuilder:validation:MinLength=1
	DisplayName string `json:"displayName"`

	// Description is the prompt's help text.
	// +optional
	Description string `json:"description,omitempty"`

	// Type of the input. Values of type secret never appear inline in the
	// ServiceSet: they reach it through a Secret.
	// +kubebuilder:default=string
	// +optional
	Type UserFacingConfigType `json:"type,omitempty"`

	// Required values must be supplied by the deployment.
	// +optional
	Required bool `json:"required,omitempty"`

	// Default value shown in the prompt.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Default *apiextensionsv1.JSON `json:"default,omitempty"`

	// Options is the closed set of allowed values.
	// +optional
	Options []string `json:"options,omitempty"`
}

// WorkspaceClassSpec is a versioned, immutable workspace offering.
// +kubebuilder:validation:XValidation:rule="!has(self.defaultResources.perReplica) || !has(self.defaultResources.perReplica.gpuType)",message="gpuType cannot be set on a WorkspaceClass — it is a per-deployment cluster-dependent choice"
// +kubebuilder:validation:XValidation:rule="!has(self.defaultResources.perReplica) || !has(self.defaultResources.perReplica.gpuNodeSelector)",message="gpuNodeSelector cannot be set on a WorkspaceClass — it is a per-deployment cluster-dependent choice"
type WorkspaceClassSpec struct {
	// DisplayName is the catalog name.
	// +required
	// +kubebuilder:validation:MinLength=1
	DisplayName string `json:"displayName"`

	// Description is the catalog text.
	// +optional
	Description string `json:"description,omitempty"`

	// ServiceTemplate is the k0rdent ServiceTemplate that wraps the workspace chart.
	// +required
	ServiceTemplate ServiceTemplateRef `json:"serviceTemplate"`

	// DefaultResources are the resources of a workspace that does not override them.
	// +required
	DefaultResources WorkspaceResourceSpec `json:"defaultResources"`

	// Prerequisites must be healthy on the target cluster first.
	// +kubebuilder:validation:MaxItems=32
	// +optional
	Prerequisites []PrerequisiteSpec `json:"prerequisites,omitempty"`

	// AccessEndpoints are the network endpoints the workspace exposes.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=32
	// +optional
	AccessEndpoints []AccessEndpoint `json:"accessEndpoints,omitempty"`

	// UserFacingConfig lists the values a user is prompted for.
	// +listType=map
	// +listMapKey=helmValuePath
	// +kubebuilder:validation:MaxItems=128
	// +optional
	UserFacingConfig []UserFacingConfigField `json:"userFacingConfig,omitempty"`

	// DeployTimeout bounds the workspace release's install; 15m when unset.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="must be a duration such as 30m or 8h, below 2562047h"
	// +optional
	DeployTimeout *metav1.Duration `json:"deployTimeout,omitempty"`

	// PrerequisiteDeployTimeout bounds prerequisite installs; deployTimeout when unset.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern="^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="must be a duration such as 30m or 8h, below 2562047h"
	// +optional
	PrerequisiteDeployTimeout *metav1.Duration `json:"prerequisiteDeployTimeout,omitempty"`

	// DefaultValues are the base Helm values of the workspace release.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	DefaultValues *apiextensionsv1.JSON `json:"defaultValues,omitempty"`

	// ResourceInjection lists extra values paths that receive the resolved resources.
	// +optional
	ResourceInjection *ResourceInjectionMap `json:"resourceInjection,omitempty"`

	// Bundle selects the template bundle that renders the workspace's
	// objects; the default is the built-in workspace-serviceset bundle.
	// +optional
	Bundle *commonv1.BundleReference `json:"bundle,omitempty"`

	// Lifecycle bounds the life of the class's workspaces and culls the
	// idle ones (Apiary only).
	// +optional
	Lifecycle *ClassLifecycle `json:"lifecycle,omitempty"`

	// PriorityClassName names the WorkspacePriorityClass the class's
	// workspaces wait with unless they name their own (Apiary only).
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern="^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
}

// WorkspaceClassStatus is the observed state of a WorkspaceClass.
type WorkspaceClassStatus struct {
	// Conditions: Ready, Reconciling, Stalled.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ObservedGeneration is the last generation the controller acted on.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Valid is true when the ServiceTemplate exists and is valid and every
	// resourceInjection path parses. Always serialized; optional in the
	// schema so that status patches need not resend it.
	// +optional
	Valid bool `json:"valid"`

	// ValidationError says why the class is not valid.
	// +optional
	ValidationError string `json:"validationError,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,shortName=wsc
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Display Name",type=string,JSONPath=`.spec.displayName`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.defaultResources.replicas`
// +kubebuilder:printcolumn:name="ServiceTemplate",type=string,JSONPath=`.spec.serviceTemplate.name`
// +kubebuilder:printcolumn:name="Valid",type=boolean,JSONPath=`.status.valid`
// +kubebuilder:printcolumn:name="ValidationError",type=string,JSONPath=`.status.validationError`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// WorkspaceClass is a versioned workspace offering: a k0rdent ServiceTemplate
// with default resources, values, prerequisites and endpoints. Its spec is
// immutable; a new version is a new class, with the version in its name.
type WorkspaceClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="WorkspaceClass spec is immutable: create a new version-named class instead"
	Spec WorkspaceClassSpec `json:"spec"`
	// Status is written by Apiary. Until then it holds observedGeneration -1
	// (as Flux's kinds do), so kstatus reads a new object as in progress.
	// +kubebuilder:default={"observedGeneration":-1}
	Status WorkspaceClassStatus `json:"status,omitempty"`
}

// GetConditions returns the class's status conditions.
func (in *WorkspaceClass) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions sets the class's status conditions.
func (in *WorkspaceClass) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }

// +kubebuilder:object:root=true

// WorkspaceClassList is a list of WorkspaceClasses.
type WorkspaceClassList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []WorkspaceClass `json:"items"`
}

func init() {
	SchemeBuilder.Register(&WorkspaceClass{}, &WorkspaceClassList{})
}
