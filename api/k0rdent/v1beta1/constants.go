package v1beta1

// Condition types that kcm sets on k0rdent objects.
const (
	// ReadyCondition aggregates all other conditions of a ClusterDeployment:
	// True means the whole object is ready.
	ReadyCondition = "Ready"
	// DeletingCondition is set while the object is being deleted.
	DeletingCondition = "Deleting"
)

// Condition types set on a ClusterDeployment (besides Ready and Deleting).
const (
	// CAPIClusterSummaryCondition summarises the CAPI Cluster; True when it is
	// fully provisioned. Absent when the template creates no CAPI Cluster.
	CAPIClusterSummaryCondition = "CAPIClusterSummary"
	// ServicesInReadyStateCondition counts ready services; its message is "<ready>/<total>".
	ServicesInReadyStateCondition = "ServicesInReadyState"
	// TemplateReadyCondition reports that the ClusterTemplate exists and is valid.
	TemplateReadyCondition = "TemplateReady"
	// CredentialReadyCondition reports that the Credential exists and is ready.
	// It is also the condition type on a Credential.
	CredentialReadyCondition = "CredentialReady"
	// HelmReleaseReadyCondition copies the Ready condition of the Flux HelmRelease.
	HelmReleaseReadyCondition = "HelmReleaseReady"
	// HelmChartReadyCondition reports that the chart was fetched and the values validated.
	HelmChartReadyCondition = "HelmChartReady"
)

// Generic condition reasons used by kcm (kcm's common.go).
const (
	// SucceededReason means the condition's subject is in the desired state.
	SucceededReason = "Succeeded"
	// FailedReason means the condition's subject failed.
	FailedReason = "Failed"
	// ProgressingReason means the condition's subject is still being worked on.
	ProgressingReason = "Progressing"
	// DeletingReason is the reason of Ready while the object is deleted (kcm v1.9.0).
	DeletingReason = "Deleting"
)

// Labels and well-known names.
const (
	// SystemNamespace is kcm's default system namespace.
	SystemNamespace = "kcm-system"

	// DefaultStateManagementProviderName is the built-in StateManagementProvider
	// (Sveltos adapter) that kcm uses when a provider name is empty.
	DefaultStateManagementProviderName = "ksm-projectsveltos"

	// StateManagementProviderAdapterLabel is the label the built-in
	// StateManagementProvider selects ServiceSets by. A ServiceSet without it
	// (set to StateManagementProviderAdapterLabelValue) is ignored.
	StateManagementProviderAdapterLabel = "ksm.k0rdent.mirantis.com/adapter"
	// StateManagementProviderAdapterLabelValue is the value of
	// StateManagementProviderAdapterLabel selected by the built-in provider.
	StateManagementProviderAdapterLabelValue = "kcm-controller-manager"

	// ManagedLabelKey (value "true") marks objects managed by kcm.
	ManagedLabelKey = "k0rdent.mirantis.com/managed"
	// ManagedLabelValue is the value of ManagedLabelKey.
	ManagedLabelValue = "true"
	// GenericComponentNameLabel is set by kcm on its objects (value "kcm").
	GenericComponentNameLabel = "k0rdent.mirantis.com/component"

	// FluxHelmReleaseNameLabel is set by Flux on everything a HelmRelease
	// installs; kcm finds the CAPI Cluster of a ClusterDeployment by it.
	FluxHelmReleaseNameLabel = "helm.toolkit.fluxcd.io/name"
	// FluxHelmReleaseNamespaceLabel is the namespace counterpart of FluxHelmReleaseNameLabel.
	FluxHelmReleaseNamespaceLabel = "helm.toolkit.fluxcd.io/namespace"
)
