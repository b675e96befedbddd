package routing

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/delivery/canon"
	"github.com/apiaryhq/apiary/internal/naming"
)

// Drop deletes the routes recorded on the workspace's status from
// their regional cluster (routes and Services first, awaited, so that their
// pool ports and host names are free; then the namespace, not awaited),
// frees the workspace's pool ports and host names and forgets the routes.
// A regional cluster that is gone or going takes its routes with it. It
// reports done=false while routes remain.
func (r *Router) Drop(ctx context.Context, obj *workspacesv1.WorkspaceDeployment) (bool, error) {
	self := client.ObjectKeyFromObject(obj)
	release := func() {
		if r.Ports != nil {
			r.Ports.Release(self)
		}
		if r.Hosts != nil {
			r.Hosts.Release(self)
		}
	}
	rs := obj.Status.Routes
	if rs == nil {
		release()
		return true, nil
	}
	key, ok := naming.ParseKey(rs.Cluster)
	if ok && r.Sinks != nil && rs.Delivery != nil && rs.Delivery.Inventory != nil && len(rs.Delivery.Inventory.Entries) > 0 {
		cd := &k0rdentv1beta1.ClusterDeployment{}
		err := r.Get(ctx, key, cd)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return false, fmt.Errorf("reading regional ClusterDeployment %s: %w", key, err)
		case cd.DeletionTimestamp.IsZero():
			sink, err := r.Sinks.For(ctx, key)
			if err != nil {
				return false, err
			}
			routes, namespaces := splitNamespaces(rs.Delivery.Inventory)
			done, err := sink.Delete(ctx, Owner(obj), routes)
			if err != nil {
				return false, fmt.Errorf("deleting the routes on regional cluster %s: %w", key, err)
			}
			if !done {
				return false, nil
			}
			// A namespace terminates on its own; its deletion is not awaited.
			if _, err := sink.Delete(ctx, Owner(obj), namespaces); err != nil {
				return false, fmt.Errorf("deleting the routes' namespace on regional cluster %s: %w", key, err)
			}
		}
	}
	release()
	obj.Status.Routes = nil
	return true, nil
}

// splitNamespaces splits an inventory into its namespaces and the rest.
func splitNamespaces(inv *commonv1.ResourceInventory) (rest, namespaces *commonv1.ResourceInventory) {
	rest, namespaces = &commonv1.ResourceInventory{}, &commonv1.ResourceInventory{}
	for _, e := range inv.Entries {
		if id, err := canon.ParseID(e.ID); err == nil && id.Group == "" && id.Kind == "Namespace" {
			namespaces.Entries = append(namespaces.Entries, e)
			continue
		}
		rest.Entries = append(rest.Entries, e)
	}
	return rest, namespaces
}
