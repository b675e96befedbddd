package v1beta1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Service states reported in ServiceState.State.
const (
	// ServiceStateDeployed means the service is deployed on the target cluster.
	ServiceStateDeployed = "Deployed"
	// ServiceStateProvisioning means the service is being deployed.
	ServiceStateProvisioning = "Provisioning"
	// ServiceStateFailed means the service failed to deploy; see FailureMessage.
	ServiceStateFailed = "Failed"
	// ServiceStatePending means the service has not been processed yet
	// (kcm's ServiceStateNotDeployed).
	ServiceStatePending = "Pending"
	// ServiceStateDeleting means the service is being removed.
	ServiceStateDeleting = "Deleting"
	// ServiceStateDeleted means the service was removed: it is gone, not
	// deploying (kcm v1.11 and later).
	ServiceStateDeleted = "Deleted"
)

// ServiceType is the deployment method of a service.
type ServiceType string

// Service types reported in ServiceState.Type.
const (
	// ServiceTypeHelm is a service deployed from a Helm chart.
	ServiceTypeHelm ServiceType = "Helm"
	// ServiceTypeKustomize is a service deployed with Kustomize.
	ServiceTypeKustomize ServiceType = "Kustomize"
	// ServiceTypeResource is a service deployed as plain resources.
	ServiceTypeResource ServiceType = "Resource"
)

// Helm actions of a service (Service.HelmAction, ServiceWithValues.HelmAction).
const (
	// HelmActionInstall installs or upgrades the chart (the default).
	HelmActionInstall = "Install"
	// HelmActionUninstall uninstalls the release.
	HelmActionUninstall = "Uninstall"
)

// Sync modes of ServiceSpec.SyncMode (deprecated in favour of provider.config).
const (
	SyncModeOneTime                      = "OneTime"
	SyncModeContinuous                   = "Continuous"
	SyncModeContinuousWithDriftDetection = "ContinuousWithDriftDetection"
	SyncModeDryRun                       = "DryRun"
)

// ServiceSpec describes the services to deploy on a cluster. It is used by
// ClusterDeployment.spec.serviceSpec (and by kcm's MultiClusterService).
type ServiceSpec struct {
	// Provider is the definition of the provider to use to deploy services.
	// +optional
	Provider StateManagementProviderConfig `json:"provider,omitempty"`

	// Services is a list of services created via ServiceTemplates
	// that could be installed on the target cluster.
	// +listType=map
	// +listMapKey=name
	// +listMapKey=namespace
	// +optional
	Services []Service `json:"services,omitempty"`

	// TemplateResourceRefs is a list of resources to collect from the management cluster,
	// the values from which can be used in templates (Sveltos TemplateResourceRef objects).
	//
	// Deprecated: use .provider.config field to define provider-specific configuration.
	// +kubebuilder:validation:items:Type=object
	// +optional
	TemplateResourceRefs []apiextensionsv1.JSON `json:"templateResourceRefs,omitempty"`

	// PolicyRefs references all the ConfigMaps/Secrets/Flux Sources containing kubernetes resources
	// that need to be deployed in the target clusters (Sveltos PolicyRef objects).
	//
	// Deprecated: use .provider.config field to define provider-specific configuration.
	// +listType=atomic
	// +kubebuilder:validation:items:Type=object
	// +optional
	PolicyRefs []apiextensionsv1.JSON `json:"policyRefs,omitempty"`

	// DriftIgnore specifies resources to ignore for drift detection (Sveltos PatchSelector objects).
	//
	// Deprecated: use .provider.config field to define provider-specific configuration.
	// +kubebuilder:validation:items:Type=object
	// +optional
	DriftIgnore []apiextensionsv1.JSON `json:"driftIgnore,omitempty"`

	// DriftExclusions specifies specific configurations of resources to ignore for drift
	// detection (Sveltos DriftExclusion objects).
	//
	// Deprecated: use .provider.config field to define provider-specific configuration.
	// +kubebuilder:validation:items:Type=object
	// +optional
	DriftExclusions []apiextensionsv1.JSON `json:"driftExclusions,omitempty"`

	// SyncMode specifies how services are synced in the target cluster.
	//
	// Deprecated: use .provider.config field to define provider-specific configuration.
	// +kubebuilder:default:=Continuous
	// +kubebuilder:validation:Enum:=OneTime;Continuous;ContinuousWithDriftDetection;DryRun
	// +optional
	SyncMode string `json:"syncMode,omitempty"`

	// Priority sets the priority for the services defined in this spec.
	// Higher value means higher priority and lower means lower.
	//
	// Deprecated: use .provider.config field to define provider-specific configuration.
	// +kubebuilder:default:=100
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2147483646
	// +optional
	Priority int32 `json:"priority,omitempty"`

	// StopOnConflict specifies what to do in case of a conflict.
	//
	// Deprecated: use .provider.config field to define provider-specific configuration.
	// +kubebuilder:default:=false
	// +optional
	StopOnConflict bool `json:"stopOnConflict,omitempty"`

	// Reload instances via rolling upgrade when a ConfigMap/Secret mounted as volume is modified.
	//
	// Deprecated: use .provider.config field to define provider-specific configuration.
	// +optional
	Reload bool `json:"reload,omitempty"`

	// ContinueOnError specifies if the services deployment should continue if an error occurs.
	//
	// Deprecated: use .provider.config field to define provider-specific configuration.
	// +kubebuilder:default:=false
	// +optional
	ContinueOnError bool `json:"continueOnError,omitempty"`
}

// StateManagementProviderConfig selects and configures the
// StateManagementProvider that deploys services.
type StateManagementProviderConfig struct {
	// Config is the provider-specific configuration applied to the produced objects.
	// For the Sveltos adapter: priority, syncMode, templateResourceRefs, policyRefs,
	// driftIgnore, driftExclusions, patches, stopOnConflict, continueOnError,
	// reloader, stopMatchingBehavior.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Config *apiextensionsv1.JSON `json:"config,omitempty"`

	// Name is the name of the [StateManagementProvider] object. Empty means
	// DefaultStateManagementProviderName for kcm-managed objects; a ServiceSet
	// must name an existing provider.
	// +kubebuilder:validation:XValidation:rule="oldSelf == '' || self == oldSelf",message="Provider name is immutable once set"
	// +optional
	Name string `json:"name,omitempty"`

	// SelfManagement flag defines whether resources must be deployed to the management cluster itself.
	// This field is ignored if set for ClusterDeployment.
	// +optional
	SelfManagement bool `json:"selfManagement,omitempty"`
}

// Service represents a Service to be deployed.
type Service struct {
	// Values is the helm values to be passed to the chart used by the template.
	// The string type is used in order to allow for templating.
	// +optional
	Values string `json:"values,omitempty"`

	// HelmOptions are the options to be passed to the provider for helm installation or updates.
	// +optional
	HelmOptions *ServiceHelmOptions `json:"helmOptions,omitempty"`

	// HelmAction specifies action on an helm chart.
	// +kubebuilder:validation:Enum:=Install;Uninstall
	// +optional
	HelmAction *string `json:"helmAction,omitempty"`

	// Template is a reference to a Template object located in the same namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Template string `json:"template"`

	// Version is the version of the service template.
	// +optional
	Version string `json:"version,omitempty"`

	// Name is the chart release.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// Namespace is the namespace the release will be installed in.
	// It will default to "default" if not provided.
	// +kubebuilder:default:=default
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// TemplateChain defines the ServiceTemplateChain object that will be used to deploy the service
	// along with desired ServiceTemplate version.
	// +optional
	TemplateChain string `json:"templateChain,omitempty"`

	// ValuesFrom can reference a ConfigMap or Secret containing helm values.
	// +optional
	ValuesFrom []ValuesFrom `json:"valuesFrom,omitempty"`

	// DependsOn specifies a list of other services that this service depends on.
	// +optional
	DependsOn []ServiceDependsOn `json:"dependsOn,omitempty"`

	// Disable can be set to disable handling of this service.
	// +optional
	Disable bool `json:"disable,omitempty"`
}

// ServiceDependsOn identifies a service by its release name and namespace.
type ServiceDependsOn struct {
	// Name is the release name on target cluster.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// Namespace is the release namespace on target cluster.
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// ValuesFrom is the source of the values to pass to the ServiceTemplate. The source
// can be a ConfigMap or a Secret located in the same namespace as the ServiceSet.
type ValuesFrom struct {
	// Kind is the kind of the source.
	// +kubebuilder:validation:Enum=ConfigMap;Secret
	// +required
	Kind string `json:"kind"`

	// Name is the name of the source.
	// +required
	Name string `json:"name"`
}

// ServiceHelmOptions are the options passed to the provider for Helm
// installations and upgrades. Every field is optional; unset means the
// provider's default.
type ServiceHelmOptions struct {
	// EnableClientCache is a flag to enable Helm client cache. If it is not specified, it will be set to false.
	// +optional
	EnableClientCache *bool `json:"enableClientCache,omitempty"`

	// DependencyUpdate updates dependencies if they are missing before installing the chart.
	// +optional
	DependencyUpdate *bool `json:"dependencyUpdate,omitempty"`

	// Wait waits until all Pods, PVCs, Services, and minimum number of Pods of a Deployment, StatefulSet,
	// or ReplicaSet are in a ready state before marking the release as successful.
	// +optional
	Wait *bool `json:"wait,omitempty"`

	// WaitForJobs waits, with Wait enabled, until all Jobs have been completed before marking the release as successful.
	// +optional
	WaitForJobs *bool `json:"waitForJobs,omitempty"`

	// CreateNamespace creates the release namespace.
	//
	// Deprecated: use .installOptions.createNamespace instead.
	// +optional
	CreateNamespace *bool `json:"createNamespace,omitempty"`

	// SkipCRDs controls whether CRDs should be installed during install/upgrade operation.
	// By default, CRDs are installed if not already present.
	// +optional
	SkipCRDs *bool `json:"skipCRDs,omitempty"`

	// Atomic deletes the installation/upgrades on failure.
	// The --wait flag will be set automatically if --atomic is used.
	// +optional
	Atomic *bool `json:"atomic,omitempty"`

	// DisableHooks prevents hooks from running during install/upgrade/uninstall.
	// +optional
	DisableHooks *bool `json:"disableHooks,omitempty"`

	// DisableOpenAPIValidation skips validating rendered templates against the Kubernetes OpenAPI Schema.
	// +optional
	DisableOpenAPIValidation *bool `json:"disableOpenAPIValidation,omitempty"`

	// SkipSchemaValidation determines if JSON schema validation is disabled.
	// +optional
	SkipSchemaValidation *bool `json:"skipSchemaValidation,omitempty"`

	// Replace replaces an older release with this one.
	//
	// Deprecated: use .installOptions.replace instead.
	// +optional
	Replace *bool `json:"replace,omitempty"`

	// Timeout is the time to wait for any individual Kubernetes operation (like Jobs for hooks) (default 5m0s).
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// Labels that would be added to release metadata.
	// +optional
	Labels *map[string]string `json:"labels,omitempty"`

	// Description is the description of an helm operation.
	// +optional
	Description *string `json:"description,omitempty"`

	// InstallOptions are options specific to helm install (Sveltos HelmInstallOptions:
	// createNamespace (default true), disableHooks, replace (default true), takeOwnership).
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	InstallOptions *apiextensionsv1.JSON `json:"installOptions,omitempty"`

	// UpgradeOptions are options specific to helm upgrade (Sveltos HelmUpgradeOptions:
	// cleanupOnFail, disableHooks, force, maxHistory (default 2), recreate,
	// resetThenReuseValues, resetValues, reuseValues, subNotes, takeOwnership, upgradeCRDs).
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	UpgradeOptions *apiextensionsv1.JSON `json:"upgradeOptions,omitempty"`

	// UninstallOptions are options specific to helm uninstall (Sveltos HelmUninstallOptions:
	// deletionPropagation, disableHooks, keepHistory).
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	UninstallOptions *apiextensionsv1.JSON `json:"uninstallOptions,omitempty"`
}

// ServiceState is the state of a Service.
type ServiceState struct {
	// Type is the type of the deployment method for the Service.
	// +kubebuilder:validation:Enum=Helm;Kustomize;Resource
	// +required
	Type ServiceType `json:"type"`

	// LastStateTransitionTime is the time the State was last transitioned.
	// It is serialized even when nil (as null), like kcm does.
	// +required
	LastStateTransitionTime *metav1.Time `json:"lastStateTransitionTime"`

	// Name is the name of the Service.
	// +required
	Name string `json:"name"`

	// Namespace is the namespace of the Service.
	// +required
	Namespace string `json:"namespace"`

	// Template is the name of the ServiceTemplate used to deploy the Service.
	// +required
	Template string `json:"template"`

	// Version is the version of the Service.
	// +optional
	Version *string `json:"version,omitempty"`

	// State is the state of the Service. Deleted is reported by kcm v1.11
	// and later only.
	// +kubebuilder:validation:Enum=Deployed;Provisioning;Failed;Pending;Deleting;Deleted
	// +required
	State string `json:"state"`

	// LastDeployedHash is kcm's fingerprint of the provider-side
	// configuration the service was last confirmed Deployed at (kcm v1.12
	// and later). kcm uses it to keep a service Deployed through transient
	// progress caused by unrelated applies; Apiary cannot compute it and
	// only carries it.
	// +optional
	LastDeployedHash string `json:"lastDeployedHash,omitempty"`

	// FailureMessage is the reason why the Service failed to deploy.
	// +optional
	FailureMessage string `json:"failureMessage,omitempty"`

	// Conditions is a list of conditions for the Service.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}
