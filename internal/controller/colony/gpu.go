package colony

import (
	"context"
	"fmt"
	"sort"

	"github.com/fluxcd/pkg/runtime/conditions"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	"github.com/apiaryhq/apiary/internal/childcluster"
	"github.com/apiaryhq/apiary/internal/controller/reconciler"
	"github.com/apiaryhq/apiary/internal/gpu"
)

func colonyWatchOwner(obj *infrav1.Colony) string {
	return "colony/" + obj.Namespace + "/" + obj.Name
}

// reconcileGPUInventory reads the GPU offerings of every ready cluster from
// its node cache (started on first use, then kept current by watches). A
// cluster that cannot be read keeps its last inventory, with the error.
// lastUpdated moves only when a cluster's offerings change.
func (r *Reconciler) reconcileGPUInventory(ctx context.Context, obj *infrav1.Colony) {
	prev := obj.Status.GPUInventory
	next := map[string]infrav1.ClusterGPUInventory{}
	var failures []string
	scanned := 0
	for _, c := range obj.Status.Clusters {
		if !c.Ready {
			continue
		}
		key := types.NamespacedName{Namespace: obj.Namespace, Name: c.ClusterDeploymentName}
		old := prev[c.ClusterDeploymentName]
		offerings, err := r.scanCluster(ctx, key, colonyWatchOwner(obj))
		if err != nil {
			entry := *old.DeepCopy()
			entry.ScanError = err.Error()
			next[c.ClusterDeploymentName] = entry
			failures = append(failures, fmt.Sprintf("%s: %s", c.ClusterDeploymentName, err))
			continue
		}
		scanned++
		entry := infrav1.ClusterGPUInventory{Offerings: offerings, LastUpdated: old.LastUpdated}
		if old.LastUpdated == nil || old.ScanError != "" || !equality.Semantic.DeepEqual(old.Offerings, offerings) {
			t := metav1.Now()
			entry.LastUpdated = &t
		}
		next[c.ClusterDeploymentName] = entry
	}
	r.releaseChildren(obj, next)
	obj.Status.GPUInventory = nil
	if len(next) > 0 {
		obj.Status.GPUInventory = next
	}
	switch {
	case len(failures) > 0:
		sort.Strings(failures)
		conditions.MarkFalse(obj, infrav1.GPUInventoryReadyCondition, infrav1.ScanFailedReason,
			"could not read the nodes of %d clusters; keeping their last inventory: %s", len(failures), reconciler.Enumerate(failures, "; ", 5))
	default:
		conditions.MarkTrue(obj, infrav1.GPUInventoryReadyCondition, infrav1.InventoryScannedReason,
			"GPU inventory of %d clusters is current", scanned)
	}
}

func (r *Reconciler) scanCluster(ctx context.Context, key types.NamespacedName, owner string) ([]infrav1.GPUOffering, error) {
	cc, err := r.Children.Watch(ctx, key, owner, childcluster.WatchOptions{Nodes: true})
	if err != nil {
		return nil, err
	}
	// A cache that lost its child keeps serving its last data: say so.
	if err := cc.LastError(); err != nil {
		return nil, err
	}
	nodes, err := cc.ListNodes(ctx)
	if err != nil {
		return nil, err
	}
	return gpu.DeriveOfferings(nodes, gpu.DefaultOptions()), nil
}

// releaseChildren stops watching the clusters of the Colony that are not in
// keep (all of them when keep is nil).
func (r *Reconciler) releaseChildren(obj *infrav1.Colony, keep map[string]infrav1.ClusterGPUInventory) {
	if r.Children == nil {
		return
	}
	names := map[string]bool{}
	for name := range obj.Status.GPUInventory {
		names[name] = true
	}
	for _, c := range obj.Status.Clusters {
		names[c.ClusterDeploymentName] = true
	}
	for name := range names {
		if _, ok := keep[name]; !ok {
			r.Children.Release(types.NamespacedName{Namespace: obj.Namespace, Name: name}, colonyWatchOwner(obj))
		}
	}
}
