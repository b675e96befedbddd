package v1

// This file is the one list of the reasons of the infra group: the reasons
// of a Colony's conditions and of the clusters of its status. A reason is
// declared here and nowhere else, and every reason declared here is set
// somewhere (hack/conditionsdocs fails otherwise), but for the ones of the
// exalsius-only list at the end. The phases of a Colony, and those of a
// cluster's ClusterDeployment, are reasons too, through commonv1.PhaseReason.

// Reasons of ClustersReady and of a cluster of status.clusters.
const (
	AllClustersReadyReason    = "AllClustersReady"
	NotAllClustersReadyReason = "NotAllClustersReady"
	// ClusterFailedReason: a cluster's ClusterDeployment failed.
	ClusterFailedReason = "ClusterFailed"
	// ClusterPendingReason: the cluster's ClusterDeployment does not exist yet.
	ClusterPendingReason = "Pending"
)

// Reasons of KubeconfigsReady.
const (
	// KubeconfigsAggregatedReason: the aggregated kubeconfig Secret holds the
	// kubeconfig of every ready cluster.
	KubeconfigsAggregatedReason = "KubeconfigsAggregated"
	// KubeconfigMissingReason: a ready cluster's kubeconfig Secret is missing.
	KubeconfigMissingReason = "KubeconfigMissing"
	// SecretWriteFailedReason: the aggregated kubeconfig Secret could not be written.
	SecretWriteFailedReason = "SecretWriteFailed"
)

// Reasons of GPUInventoryReady.
const (
	InventoryScannedReason = "InventoryScanned"
	ScanFailedReason       = "ScanFailed"
)

// Exalsius-only reasons: the exalsius operator sets them and Apiary never
// does. They are kept for wire compatibility, so that clients written
// against the operator (which switch on these values) still compile against
// this package. hack/conditionsdocs accepts them unset, and fails when one is
// set: a reason Apiary sets belongs to the lists above.
//
//apiary:exalsius-only
const (
	// ClusterEnsureFailedReason: the operator's ClustersReady reason when it
	// could not create a ClusterDeployment; Apiary reports such a cluster as
	// RenderFailed or DeliveryFailed, and ClustersReady as ClusterFailed.
	ClusterEnsureFailedReason = "ClusterEnsureFailed"
)
