package routes

import (
	"context"
	"sort"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/access"
	"github.com/apiaryhq/apiary/internal/childcluster"
	"github.com/apiaryhq/apiary/internal/delivery"
	"github.com/apiaryhq/apiary/internal/naming"
)

var sweepLog = log.Log.WithName("workspace-route-sweeper")

// Sweeper deletes, from regional clusters, the routes, mirror
// Services and namespaces Apiary delivered for workspaces that no longer
// exist (e.g. deleted while their regional cluster was out of reach). It
// sweeps every regional cluster once when the manager starts, then one
// regional cluster after each deletion of a workspace routed there: no
// periodic polling.
type Sweeper struct {
	// Reader reads ClusterDeployments and workspaces: the manager's cache.
	Reader client.Reader
	// Sinks are the route sinks; a Git one sweeps on its own when it opens.
	Sinks Sinks
	// Children reaches regional clusters.
	Children *childcluster.Manager

	mu      sync.Mutex
	pending map[types.NamespacedName]bool
	wake    chan struct{}
}

// NewSweeper returns a Sweeper; add it to the manager.
func NewSweeper(reader client.Reader, sinks Sinks, children *childcluster.Manager) *Sweeper {
	return &Sweeper{Reader: reader, Sinks: sinks, Children: children, pending: map[types.NamespacedName]bool{}, wake: make(chan struct{}, 1)}
}

// NeedLeaderElection makes only the leader sweep.
func (s *Sweeper) NeedLeaderElection() bool { return true }

// Start sweeps every regional cluster, then each one it is asked to.
func (s *Sweeper) Start(ctx context.Context) error {
	s.sweepAll(ctx)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.wake:
			s.mu.Lock()
			keys := make([]types.NamespacedName, 0, len(s.pending))
			for k := range s.pending {
				keys = append(keys, k)
			}
			s.pending = map[types.NamespacedName]bool{}
			s.mu.Unlock()
			for _, k := range keys {
				s.sweep(ctx, k)
			}
		}
	}
}

// sweepOnOpen is implemented by route sinks that sweep a regional
// cluster's routes on their own when they open it, such as Git.
type sweepOnOpen interface {
	Open(ctx context.Context, regional types.NamespacedName) error
}

// Trigger asks for a sweep of one regional cluster; requests coalesce. In
// Git mode a workspace's deletion removed its files, so there is nothing
// to sweep after it.
func (s *Sweeper) Trigger(key types.NamespacedName) {
	if s == nil {
		return
	}
	if _, ok := s.Sinks.(sweepOnOpen); ok {
		return
	}
	s.mu.Lock()
	s.pending[key] = true
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// sweepAll sweeps every regional ClusterDeployment: those labelled with a
// KOF cluster name or the regional role.
func (s *Sweeper) sweepAll(ctx context.Context) {
	list := &k0rdentv1beta1.ClusterDeploymentList{}
	if err := s.Reader.List(ctx, list); err != nil {
		sweepLog.Error(err, "listing ClusterDeployments to sweep orphaned routes")
		return
	}
	sort.Slice(list.Items, func(i, j int) bool {
		return list.Items[i].Namespace+"/"+list.Items[i].Name < list.Items[j].Namespace+"/"+list.Items[j].Name
	})
	for i := range list.Items {
		cd := &list.Items[i]
		_, named := cd.Labels[access.ClusterNameLabel]
		if (named || cd.Labels[access.ClusterRoleLabel] == access.RoleRegional) && cd.DeletionTimestamp.IsZero() {
			s.sweep(ctx, client.ObjectKeyFromObject(cd))
		}
	}
}

// sweep deletes the orphaned route objects of one regional cluster. An
// unreachable cluster is skipped: the next sweep looks again.
func (s *Sweeper) sweep(ctx context.Context, key types.NamespacedName) {
	logger := sweepLog.WithValues("regionalCluster", key)
	if o, ok := s.Sinks.(sweepOnOpen); ok {
		if err := o.Open(ctx, key); err != nil {
			logger.Error(err, "opening the Git folder of a regional cluster's routes to sweep it")
		}
		return
	}
	c, err := s.Children.Client(ctx, key)
	if err != nil {
		logger.V(1).Info("skipping the sweep of an unreachable regional cluster", "error", err.Error())
		return
	}
	kinds := []schema.GroupVersionKind{{Version: "v1", Kind: "Service"}, access.HTTPRouteGVK}
	if v := access.ServedTCPRouteVersion(c); v != "" {
		kinds = append(kinds, access.TCPRouteGVK(v))
	}
	kinds = append(kinds, schema.GroupVersionKind{Version: "v1", Kind: "Namespace"})
	selector := client.MatchingLabels{delivery.LabelOwnerKind: naming.LabelValue(OwnerKind)}
	for _, gvk := range kinds {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.List(ctx, list, selector); err != nil {
			if !meta.IsNoMatchError(err) {
				logger.V(1).Info("skipping a kind in the sweep", "kind", gvk.Kind, "error", err.Error())
			}
			continue
		}
		for i := range list.Items {
			o := &list.Items[i]
			owner := delivery.Owner{Namespace: o.Labels[delivery.LabelOwnerNamespace], Name: o.Labels[delivery.LabelOwnerName]}
			if workspaceExists(ctx, s.Reader, owner) || !o.DeletionTimestamp.IsZero() {
				continue
			}
			uid := o.UID
			if err := c.Delete(ctx, o, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
				logger.Error(err, "deleting an orphaned route object", "kind", gvk.Kind, "object", client.ObjectKeyFromObject(o))
				continue
			}
			logger.Info("deleted an orphaned route object", "kind", gvk.Kind, "object", client.ObjectKeyFromObject(o), "workspace", owner.Namespace+"/"+owner.Name)
		}
	}
}

// workspaceExists reports whether the workspace a route owner names exists;
// true when the cache cannot tell, so that nothing is swept by mistake.
func workspaceExists(ctx context.Context, c client.Reader, o delivery.Owner) bool {
	err := c.Get(ctx, types.NamespacedName{Namespace: o.Namespace, Name: o.Name}, &workspacesv1.WorkspaceDeployment{})
	return !apierrors.IsNotFound(err)
}

// WorkspaceExists is workspaceExists for route sinks that sweep on their
// own, such as Git.
func WorkspaceExists(c client.Reader) func(delivery.Owner) bool {
	return func(o delivery.Owner) bool { return workspaceExists(context.Background(), c, o) }
}
