package uninstall

import (
	"context"
	"fmt"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/delivery/canon"
)

// OwnerGroups are the API groups of Apiary's CRDs. An ownerReference to a
// kind of these groups makes Kubernetes' garbage collector delete the
// object once its owner is gone, as it is when the CRDs are deleted.
var OwnerGroups = []string{infrav1.GroupVersion.Group, workspacesv1.GroupVersion.Group, quotav1alpha1.GroupVersion.Group}

// OrphanFinalizers are the finalizers Orphan also removes: those of
// Colonies and WorkspaceDeployments, which only a running controller
// releases (by deleting what they own), and without which deleting them,
// or their CRDs, waits forever.
var OrphanFinalizers = []string{infrav1.ColonyFinalizer, workspacesv1.WorkspaceDeploymentFinalizer}

// orphanKinds are always searched for owner references: what Apiary's
// built-in bundles and the Colony controller create in an owner's
// namespace. The kinds of the delivery inventories are searched too.
var orphanKinds = []schema.GroupVersionKind{
	k0rdentv1beta1.GroupVersion.WithKind("ClusterDeployment"),
	k0rdentv1beta1.GroupVersion.WithKind("ServiceSet"),
	{Version: "v1", Kind: "Secret"},
	{Version: "v1", Kind: "ConfigMap"},
}

// listPage bounds how many objects one list request returns.
const listPage = 500

// orphan removes every ownerReference to a kind of OwnerGroups from the
// objects of orphanKinds and of the kinds the Colonies' and
// WorkspaceDeployments' delivery inventories name, then the
// OrphanFinalizers of Colonies and WorkspaceDeployments. The finalizers go
// only once every reference is gone, so that a failed run leaves the
// owners undeletable rather than their objects collectable.
func orphan(ctx context.Context, c client.Client, opts Options, rep *Report) error {
	colonies := &infrav1.ColonyList{}
	if err := c.List(ctx, colonies); err != nil {
		return fmt.Errorf("listing Colonies: %w", err)
	}
	workspaces := &workspacesv1.WorkspaceDeploymentList{}
	if err := c.List(ctx, workspaces); err != nil {
		return fmt.Errorf("listing WorkspaceDeployments: %w", err)
	}
	var inventories []*commonv1.ResourceInventory
	for i := range colonies.Items {
		if d := colonies.Items[i].Status.Delivery; d != nil {
			inventories = append(inventories, d.Inventory)
		}
	}
	for i := range workspaces.Items {
		if d := workspaces.Items[i].Status.Delivery; d != nil {
			inventories = append(inventories, d.Inventory)
		}
	}
	for _, gvk := range ownedKinds(inventories) {
		n, err := disown(ctx, c, gvk, opts)
		rep.OwnerReferences += n
		if err != nil {
			return err
		}
	}
	var owners []client.Object
	for i := range colonies.Items {
		owners = append(owners, &colonies.Items[i])
	}
	for i := range workspaces.Items {
		owners = append(owners, &workspaces.Items[i])
	}
	for _, o := range owners {
		n, err := release(ctx, c, o, OrphanFinalizers, opts)
		rep.Finalizers += n
		if err != nil {
			return err
		}
	}
	return nil
}

// ownedKinds are orphanKinds and the kinds of the inventories' entries,
// once each, in a fixed order. Entries that do not parse are skipped:
// orphanKinds cover what the built-in bundles render.
func ownedKinds(inventories []*commonv1.ResourceInventory) []schema.GroupVersionKind {
	seen := map[schema.GroupKind]bool{}
	out := slices.Clone(orphanKinds)
	for _, gvk := range out {
		seen[gvk.GroupKind()] = true
	}
	var more []schema.GroupVersionKind
	for _, inv := range inventories {
		if inv == nil {
			continue
		}
		for _, e := range inv.Entries {
			id, err := canon.ParseID(e.ID)
			if err != nil || e.Version == "" {
				continue
			}
			gvk := id.GroupVersionKind(e.Version)
			if !seen[gvk.GroupKind()] {
				seen[gvk.GroupKind()] = true
				more = append(more, gvk)
			}
		}
	}
	sort.Slice(more, func(i, j int) bool { return more[i].String() < more[j].String() })
	return append(out, more...)
}

// disown removes the ownerReferences to OwnerGroups from every object of
// a kind, reading metadata only (Secrets' data is never read). A kind that
// is not served is skipped.
func disown(ctx context.Context, c client.Client, gvk schema.GroupVersionKind, opts Options) (int, error) {
	n := 0
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	for {
		if err := c.List(ctx, list, client.Limit(listPage), client.Continue(list.GetContinue())); err != nil {
			if meta.IsNoMatchError(err) {
				return n, nil
			}
			return n, fmt.Errorf("listing %s: %w", gvk.Kind, err)
		}
		for i := range list.Items {
			obj := &list.Items[i]
			obj.SetGroupVersionKind(gvk)
			removed, err := removeOwnerRefs(ctx, c, obj, opts)
			n += removed
			if err != nil {
				return n, err
			}
		}
		if list.GetContinue() == "" {
			return n, nil
		}
	}
}

// removeOwnerRefs removes an object's ownerReferences to OwnerGroups.
func removeOwnerRefs(ctx context.Context, c client.Client, obj *metav1.PartialObjectMetadata, opts Options) (int, error) {
	base := obj.DeepCopy()
	var kept []metav1.OwnerReference
	n := 0
	for _, ref := range obj.OwnerReferences {
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil || !slices.Contains(OwnerGroups, gv.Group) {
			kept = append(kept, ref)
			continue
		}
		n++
		fmt.Fprintf(opts.Log, "%s %s: removing owner reference to %s %s\n", obj.Kind, describe(obj), ref.Kind, ref.Name)
	}
	if n == 0 || opts.DryRun {
		return n, nil
	}
	obj.OwnerReferences = kept
	if err := c.Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}), client.FieldOwner(FieldOwner)); client.IgnoreNotFound(err) != nil {
		return 0, fmt.Errorf("removing the owner references of %s %s: %w", obj.Kind, describe(obj), err)
	}
	return n, nil
}
