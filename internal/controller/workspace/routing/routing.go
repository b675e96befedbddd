// Package routing is the workspace controller's last step: it publishes a
// Running workspace's access endpoints on the tenant Gateway of its
// regional cluster (HTTPRoutes by host name, each host held by one
// workspace, TCPRoutes on ports of the Gateway's pool, and the mirror
// Services they point at), delivered by
// the regional cluster's route sink, reads them back into status.access
// and RoutesReady, and removes them when the workspace goes.
package routing

import (
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/access"
	"github.com/apiaryhq/apiary/internal/childcluster"
	routesink "github.com/apiaryhq/apiary/internal/delivery/routes"
	"github.com/apiaryhq/apiary/internal/mesh"
	"github.com/apiaryhq/apiary/internal/render"
)

// Router routes workspaces. Set its fields before the first Route.
type Router struct {
	// Client reads ClusterDeployments and workspaces: the manager's cache.
	client.Client
	// Children reaches regional and child clusters, and watches their Gateways.
	Children *childcluster.Manager
	// Sinks deliver the routes to regional clusters; routing is off when nil.
	Sinks routesink.Sinks
	// Bundles holds the workspace-routes bundle.
	Bundles *render.Resolver
	// Settings are passed to bundles as .Input.operator.
	Settings map[string]any
	// Gateway is the tenant Gateway of regional clusters;
	// istio-system/istio-ingressgateway when unset.
	Gateway types.NamespacedName
	// Mesh says whether routes need the per-child waypoints.
	Mesh mesh.Config
	// SyncReader reads Flux Kustomizations (the manager's cache) in Git mode.
	SyncReader client.Reader
	// Ports hands out the TCP ports of regional clusters' pools.
	Ports *access.Ledger
	// Stripe is the part of every pool this replica hands new ports from.
	Stripe access.Stripe
	// Hosts gives each host name of a tenant Gateway to one workspace.
	Hosts *access.HostLedger
}

// Target is the workspace a Route call publishes, as the earlier steps
// found it, and what its routes wait for when the call returns.
type Target struct {
	Obj   *workspacesv1.WorkspaceDeployment
	Class *workspacesv1.WorkspaceClass
	CD    *k0rdentv1beta1.ClusterDeployment
	CDKey types.NamespacedName

	// Follows are the clusters whose routing infrastructure (tenant
	// Gateway, waypoints, regional ClusterDeployment) the routes read:
	// their changes must wake the workspace.
	Follows []types.NamespacedName
	// AwaitingSync: the routes wait for Flux to apply a commit.
	AwaitingSync bool
	// AwaitingPort: an endpoint waits for a free port of the pool.
	AwaitingPort bool
	// AwaitingHost: an endpoint waits for a host name another workspace holds.
	AwaitingHost bool
	// Hosts are the host names the routes hold: another workspace that
	// claims one of them (shards racing for it) must wake the workspace,
	// the younger of the two backing off.
	Hosts []string
}

func (w *Target) follow(cluster types.NamespacedName) { w.Follows = append(w.Follows, cluster) }

// WatchOwner owns the Gateway watches of a workspace's routes, on its
// regional cluster and, with waypoints, on its child.
func WatchOwner(obj *workspacesv1.WorkspaceDeployment) string {
	return "routes/" + obj.Namespace + "/" + obj.Name
}
