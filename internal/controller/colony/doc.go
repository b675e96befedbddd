// Package colony is the controller of the Colony kind (infra.exalsius.ai).
// It owns a Colony's status and finalizer, and the k0rdent ClusterDeployments
// rendered from its entries: it renders them from the Colony's bundle, hands
// them to the delivery sink, and reports the clusters' readiness
// (ClustersReady, status.clusters), the aggregated kubeconfig Secret it
// writes (KubeconfigsReady) and the GPU inventory of the clusters' nodes
// (GPUInventoryReady). The reasons it sets are those of api/infra/v1 and
// api/common/v1. It imports no other kind's package (kinds_test.go).
package colony
