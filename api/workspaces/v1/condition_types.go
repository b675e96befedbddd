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
	// QuotaReservedCondition is Apiary's: whether the workspace is charged
	// to every TenantQuota that selects its namespace.
	QuotaReservedCondition = "QuotaReserved"
	// ShardAssignedCondition is Apiary's: with sharding, False while the
	// shard the workspace's cluster belongs to cannot act on it (another
	// shard holds the cluster and has not handed it over, or the shards
	// run with different numbers of shards). Written by that shard; absent
	// on the happy path, never True.
	ShardAssignedCondition = "ShardAssigned"
	// ActivityKnownCondition is Apiary's: with an idle policy, False once
	// the policy's source gave no activity ActivityFailuresShown times in
	// a row (the workspace is then never culled as idle), True again when
	// it answers; absent until the source first keeps failing.
	ActivityKnownCondition = "ActivityKnown"
)

// ActivityFailuresShown is how many answers in a row without an activity
// turn ActivityKnown False.
const ActivityFailuresShown = 3

// Reasons of ActivityKnown (Apiary's). ActivityUnknownReason is also the
// Warning event on the workspace and its class when the condition turns False.
const (
	ActivityKnownReason   = "ActivityKnown"
	ActivityUnknownReason = "ActivityUnknown"
)

// WorkspaceDeployment and WorkspaceClass condition reasons.
const (
	ClassResolvedReason = "ClassResolved"
	// ShardHandOverReason: the cluster is held by another shard, which is to
	// hand it over (it drains and releases it, or its Lease lapses).
	ShardHandOverReason = "ShardHandOver"
	// ShardMismatchReason: the cluster is held by a shard index this
	// replica's number of shards does not have, whose Lease is held.
	ShardMismatchReason             = "ShardMismatch"
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

// HelmReleaseDeletedReason: k0rdent reports the workspace's release Deleted
// (kcm 1.11 and later): it is gone, not deploying.
const HelmReleaseDeletedReason = "HelmReleaseDeleted"

// Reasons of a workspace that waits for a valuesFrom object: it does not
// exist (yet), or the ServiceAccount it is read as may not read it
// (--values-from-service-account).
const (
	ValuesFromNotFoundReason  = "ValuesFromNotFound"
	ValuesFromForbiddenReason = "ValuesFromForbidden"
)

// InvalidResourcesReason fails a workspace whose resolved resources Apiary
// cannot admit: an unknown GPU vendor, or amounts beyond its bounds.
const InvalidResourcesReason = "InvalidResources"

// ReservedValuesReason (Apiary's) fails a workspace whose values, inline or
// from a valuesFrom object, set a key under _exalsius, and invalidates a
// class whose defaultValues or userFacingConfig do: what a chart reads there
// is the resources and placement Apiary admitted and charged.
const ReservedValuesReason = "ReservedValues"

// InjectedValueOverriddenReason (Apiary's) fails a workspace whose objects,
// as they would be delivered, would give the chart at a path where Apiary
// injects the admitted resources or placement anything but what was
// admitted: the values of a service merged with every valuesFrom document
// it names, as Sveltos merges them, are checked right before delivery.
const InjectedValueOverriddenReason = "InjectedValueOverridden"

// PrerequisiteVersionConflictReason (Apiary's) fails a workspace whose
// class's versionConstraint excludes the version that the cluster's shared
// install of a prerequisite runs: a newer class upgraded it, and Apiary never
// downgrades a shared install.
const PrerequisiteVersionConflictReason = "PrerequisiteVersionConflict"

// Apiary's reasons of the GPU gate (GPUCapacityAvailable) and of the
// QuotaReserved condition.
const (
	// GPUCapacityFragmentedReason: enough GPUs are free on matching nodes
	// in all, but no node has room for one replica.
	GPUCapacityFragmentedReason = "GpuCapacityFragmented"
	// GPUReplicaTooLargeReason: every matching node has fewer GPUs than one
	// replica asks for; the workspace can never be placed (Failed).
	GPUReplicaTooLargeReason = "GpuReplicaTooLarge"
	// GPURequestInfeasibleReason: the matching nodes together cannot hold
	// every replica even with nothing else on them; the workspace can never
	// be placed on the cluster as it is (Failed). The message names the
	// shortfall.
	GPURequestInfeasibleReason = "GpuRequestInfeasible"
	// WaitingBehindOlderReason: older workspaces wait for the GPUs (or the
	// quota) this one would take, and are served first.
	WaitingBehindOlderReason = "WaitingBehindOlderWorkspaces"
	// QuotaReservedReason: the workspace is charged to its tenant's quotas.
	QuotaReservedReason = "QuotaReserved"
	// QuotaExceededReason: a TenantQuota has no room for the workspace.
	QuotaExceededReason = "QuotaExceeded"
)

// PortPoolExhaustedReason is Apiary's RoutesReady reason: a TCP or SSH
// endpoint found no free port in the tenant Gateway's pool.
const PortPoolExhaustedReason = "PortPoolExhausted"

// HostNameTakenReason is Apiary's RoutesReady reason: an HTTP endpoint's
// host name is held on the tenant Gateway by another workspace (or another
// writer's route); the endpoint waits until the holder goes.
const HostNameTakenReason = "HostNameTaken"

// Lifecycle: a workspace that stops, starts again and expires (Apiary only).
const (
	// ExpiresSoonCondition is True from the class's expiryWarning before a
	// workspace's expiry until it expires; absent otherwise.
	ExpiresSoonCondition = "ExpiresSoon"

	// StoppingReason: the workspace is giving back its pods, GPUs, quota and URLs.
	StoppingReason = "Stopping"
	// StoppedReason: the workspace is stopped; its namespace and volumes stay.
	StoppedReason = "Stopped"
	// StartingReason: a stopped workspace was asked to start and queues again.
	StartingReason = "Starting"
	// StartedReason: a starting workspace was admitted again and its
	// workloads scaled back; its ServiceSet is delivered without the pause.
	StartedReason = "Started"
	// ExpiredReason: the workspace reached its expiry and was stopped or deleted.
	ExpiredReason = "Expired"
	// ExpiresSoonReason: the workspace expires within its class's expiryWarning.
	ExpiresSoonReason = "ExpiresSoon"
	// IdleCulledReason: the workspace was idle for its class's idle.after and was stopped.
	IdleCulledReason = "IdleCulled"
	// StopRevertedReason: something scaled a stopped workspace's workloads
	// up again (a Helm upgrade); Apiary scaled them back to zero.
	StopRevertedReason = "StopReverted"
	// StopUnsupportedReason: the class's bundle turns on Sveltos drift
	// detection without excluding /spec/replicas, which would undo a stop.
	StopUnsupportedReason = "StopUnsupported"
	// ExpiryDeleteRefusedReason: a workspace applied by Flux would come back
	// if deleted, so the Delete expiry policy stops it instead.
	ExpiryDeleteRefusedReason = "ExpiryDeleteRefused"
	// ActivityProbeRefusedReason: the idle policy's endpoint names a
	// Service that the workspace's release does not make (one of type
	// ExternalName), so its activity is not asked and stays unknown.
	ActivityProbeRefusedReason = "ActivityProbeRefused"
)

// Ownership: what a workspace finds already held by another (Apiary only).
const (
	// NameConflictReason: the workspace's ServiceSet name is held by another
	// workspace (names join cluster and workspace with "-", so a-b/c and
	// a/b-c share one); nothing of the other is touched.
	NameConflictReason = "NameConflict"
	// NotOwnerReason: a child-side action (scale, unpause, delete) was
	// refused because what it would act on belongs to another workspace.
	NotOwnerReason = "NotOwner"
	// OrphanSweptReason (on a ServiceSet): its workspace is gone without
	// its cleanup (its finalizer was removed); Apiary removed the
	// ServiceSet, its values Secret and the workspace's child namespace.
	OrphanSweptReason = "OrphanSwept"
)
