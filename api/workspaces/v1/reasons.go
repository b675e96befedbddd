package v1

// This file is the one list of the reasons of the workspaces group: the
// reasons of the conditions of WorkspaceDeployment and WorkspaceClass, and
// of the events recorded on them and on the ServiceSets made for them. A
// reason is declared here and nowhere else, and every reason declared here is
// set somewhere (hack/conditionsdocs fails otherwise), but for the ones of
// the exalsius-only list at the end. The phases of a workspace are reasons too
// (of Ready, and of the events of a phase change), through
// commonv1.PhaseReason.

// Reasons of PriorityResolved (Apiary's).
const (
	// PriorityResolvedReason: the workspace waits with its priority class's value.
	PriorityResolvedReason = "PriorityResolved"
	// PriorityClassNotFoundReason: the WorkspacePriorityClass does not
	// exist (yet); the workspace waits for it (Pending).
	PriorityClassNotFoundReason = "PriorityClassNotFound"
	// PriorityNotAllowedReason: the workspace names a priority class whose
	// namespaceSelector does not select its namespace (Failed, and a
	// Warning event): a tenant cannot raise its own priority.
	PriorityNotAllowedReason = "PriorityNotAllowed"
)

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
	// FeasibilityNotMeasuredReason: a workspace without GPUs opens no
	// watch of its child's nodes and pods, and none was open to measure
	// its CPU, memory and storage with (Feasible is Unknown).
	FeasibilityNotMeasuredReason   = "FeasibilityNotMeasured"
	ResourcesInjectedReason        = "ResourcesInjected"
	UserPathsOverwrittenReason     = "UserPathsOverwritten"
	PrerequisitesMetReason         = "PrerequisitesMet"
	InstallingPrerequisitesReason  = "InstallingPrerequisites"
	PrerequisitesNotReadyReason    = "PrerequisitesNotReady"
	PrerequisiteNamespaceConflict  = "PrerequisiteNamespaceConflict"
	HelmReleaseDeployedReason      = "HelmReleaseDeployed"
	HelmReleaseFailedReason        = "HelmReleaseFailed"
	HelmReleaseNotReadyReason      = "HelmReleaseNotReady"
	DeploymentReadyReason          = "DeploymentReady"
	DeployTimeoutReason            = "DeployTimeout"
	GPUOfferingUnavailableReason   = "GpuOfferingUnavailable"
	WaitingForGPUCapacityReason    = "WaitingForGpuCapacity"
	RequiredConfigMissingReason    = "RequiredConfigMissing"
	ValuesInvalidReason            = "ValuesInvalid"
	ChildUnreachableReason         = "ChildUnreachable"
	NamespaceConflictReason        = "NamespaceConflict"
	RoutesReadyReason              = "RoutesReady"
	RoutingInProgressReason        = "RoutingInProgress"
	RoutingErrorReason             = "RoutingError"
	RoutingInfraNotReadyReason     = "RoutingInfraNotReady"
	ServiceTemplateNotFoundReason  = "ServiceTemplateNotFound"
	ServiceTemplateInvalidReason   = "ServiceTemplateInvalid"
	InvalidResourceInjectionReason = "InvalidResourceInjection"
	ClassInUseReason               = "ClassInUse"
)

// ClusterNotReadyReason (ClusterDeploymentResolved, Apiary's): the
// workspace's ClusterDeployment exists but its cluster is not provisioned or
// not reachable yet; the workspace stays Pending.
const ClusterNotReadyReason = "ClusterNotReady"

// ConfigResolvedReason (ConfigResolved, Apiary's): the workspace's values and
// the valuesFrom objects they name resolved.
const ConfigResolvedReason = "ConfigResolved"

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

// Reasons of the events of shared prerequisite installs (Apiary's): on a
// workspace whose class upgrades the cluster's shared install, and on the
// shared prerequisite ServiceSet as the prerequisite controller removes it
// once no workspace of the cluster needs it.
const (
	// PrerequisiteUpgradedReason: the workspace's class upgraded the
	// cluster's shared install of a prerequisite.
	PrerequisiteUpgradedReason = "PrerequisiteUpgraded"
	// PrerequisiteUnusedReason: no workspace of the cluster needs the
	// prerequisite; it is removed after the grace period unless one does.
	PrerequisiteUnusedReason = "PrerequisiteUnused"
	// PrerequisiteNeededAgainReason: a workspace needs the prerequisite
	// again; its removal is cancelled.
	PrerequisiteNeededAgainReason = "PrerequisiteNeededAgain"
	// PrerequisiteRemovedReason: the grace period passed with no workspace
	// needing the prerequisite; it is removed.
	PrerequisiteRemovedReason = "PrerequisiteRemoved"
)

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
	// WaitingBehindOlderReason: workspaces ahead in the queue (of a higher
	// priority, or as high and older) wait for the GPUs (or the quota) this
	// one would take, and are served first.
	WaitingBehindOlderReason = "WaitingBehindOlderWorkspaces"
	// PreemptingReason: the workspace cannot fit, and lower-priority
	// workspaces of its tenant are stopping to make room for it (its
	// priority class's preemptionPolicy is PreemptLowerPriority); also the
	// reason of the Normal event that names them.
	PreemptingReason = "Preempting"

	// ReclaimingReason: the workspace fits its TenantQuota's nominal
	// share, which the quota lent to its cohort; the borrowers are stopped
	// once they have run their minimum time (docs/admission.md, "Cohorts").
	ReclaimingReason = "Reclaiming"
	// PreemptedReason: the workspace was stopped for one of a higher
	// priority (a Warning event naming it).
	PreemptedReason = "Preempted"
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

// Exalsius-only reasons: the exalsius operator sets them and Apiary never
// does. They are kept for wire compatibility, so that clients written
// against the operator (which switch on these values) still compile against
// this package. hack/conditionsdocs accepts them unset, and fails when one is
// set: a reason Apiary sets belongs to the lists above.
//
//apiary:exalsius-only
const (
	// InvalidPrerequisiteReason: the operator failed a prerequisite with a
	// versionConstraint, which it did not implement; Apiary honours the
	// constraint (PrerequisiteVersionConflict when it cannot).
	InvalidPrerequisiteReason = "InvalidPrerequisite"
	// InternalErrorReason: the operator failed a workspace whose values did
	// not merge or serialize; Apiary reports that as ValuesInvalid or
	// RenderFailed.
	InternalErrorReason = "InternalError"
)
