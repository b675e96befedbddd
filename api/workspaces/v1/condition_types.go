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
	// PriorityResolvedCondition is Apiary's: whether the workspace's
	// priority class (its own, or its class's default) exists and may be
	// used in its namespace; absent when it has none.
	PriorityResolvedCondition = "PriorityResolved"
)

// ActivityFailuresShown is how many answers in a row without an activity
// turn ActivityKnown False.
const ActivityFailuresShown = 3

// ExpiresSoonCondition is True from the class's expiryWarning before a
// workspace's expiry until it expires; absent otherwise (Apiary only).
const ExpiresSoonCondition = "ExpiresSoon"
