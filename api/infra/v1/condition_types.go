package v1

// Colony condition types.
const (
	// ClustersReadyCondition reports how many of the Colony's clusters are ready.
	ClustersReadyCondition = "ClustersReady"
	// KubeconfigsReadyCondition reports the aggregated kubeconfig Secret.
	KubeconfigsReadyCondition = "KubeconfigsReady"
	// GPUInventoryReadyCondition reports the last GPU inventory scan.
	GPUInventoryReadyCondition = "GPUInventoryReady"
)
