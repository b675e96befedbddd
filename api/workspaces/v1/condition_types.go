package v1

// WorkspaceDeployment condition types, as the exalsius operator names them.
const (
	ClassResolvedCondition             = "ClassResolved"
	ClusterDeploymentResolvedCondition = "ClusterDeploymentResolved"
	FeasibleCondition                  = "Feasible"
	ResourcesInjectedCondition         = "ResourcesInjected"
	PrerequisitesMetCondition          = "PrerequisitesMet"
	HelmReleaseReadyCondition          = "HelmReleaseReady"
	RoutesReadyCondition               = "RoutesReady"
	// GPUCapacityCondition is Apiary's: whether the GPU gate passed.
	GPUCapacityCondition = "GPUCapacityAvailable"
	// ConfigResolvedCondition is Apiary's: whether values and secrets resolved.
	ConfigResolvedCondition = "ConfigResolved"
)

// WorkspaceDeployment and WorkspaceClass condition reasons.
const (
	ClassResolvedReason             = "ClassResolved"
	ClassNotFoundReason             = "ClassNotFound"
	ClassInvalidReason              = "InvalidWorkspaceClass"
	ClusterDeploymentResolvedReason = "ClusterDeploymentResolved"
	ClusterDeploymentNotFoundReason = "ClusterDeploymentNotFound"
	CrossNamespaceRefDeniedReason   = "CrossNamespaceReferenceDenied"
	ResourcesAvailableReason        = "ResourcesAvailable"
	InsufficientResourcesReason     = "InsufficientResources"
	FeasibilityUnknownReason        = "FeasibilityUnknown"
	ResourcesInjectedReason         = "ResourcesInjected"
	UserPathsOverwrittenReason      = "UserPathsOverwritten"
	PrerequisitesMetReason          = "PrerequisitesMet"
	InstallingPrerequisitesReason   = "InstallingPrerequisites"
	PrerequisitesNotReadyReason     = "PrerequisitesNotReady"
	InvalidPrerequisiteReason       = "InvalidPrerequisite"
	PrerequisiteNamespaceConflict   = "PrerequisiteNamespaceConflict"
	HelmReleaseDeployedReason       = "HelmReleaseDeployed"
	HelmReleaseFailedReason         = "HelmReleaseFailed"
	HelmReleaseNotReadyReason       = "HelmReleaseNotReady"
	DeploymentReadyReason           = "DeploymentReady"
	DeployTimeoutReason             = "DeployTimeout"
	GPUOfferingUnavailableReason    = "GpuOfferingUnavailable"
	WaitingForGPUCapacityReason     = "WaitingForGpuCapacity"
	RequiredConfigMissingReason     = "RequiredConfigMissing"
	ValuesInvalidReason             = "ValuesInvalid"
	ChildUnreachableReason          = "ChildUnreachable"
	NamespaceConflictReason         = "NamespaceConflict"
	RoutesReadyReason               = "RoutesReady"
	RoutingInProgressReason         = "RoutingInProgress"
	RoutingErrorReason              = "RoutingError"
	RoutingInfraNotReadyReason      = "RoutingInfraNotReady"
	InternalErrorReason             = "InternalError"
	ServiceTemplateNotFoundReason   = "ServiceTemplateNotFound"
	ServiceTemplateInvalidReason    = "ServiceTemplateInvalid"
	InvalidResourceInjectionReason  = "InvalidResourceInjection"
	ClassInUseReason                = "ClassInUse"
)

// PortPoolExhaustedReason is Apiary's RoutesReady reason: a TCP or SSH
// endpoint found no free port in the tenant Gateway's pool.
const PortPoolExhaustedReason = "PortPoolExhausted"
