package controllers

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/apiaryhq/apiary/internal/childcluster"
	"github.com/apiaryhq/apiary/internal/delivery"
)

// RouteSinks hands out the delivery sink that holds workspaces' routes for
// one regional cluster, named by its ClusterDeployment. The direct
// implementation applies them to the regional cluster; a Git implementation
// would commit them where the regional cluster's Flux reads.
type RouteSinks interface {
	For(ctx context.Context, regional types.NamespacedName) (delivery.Sink, error)
}

// DirectRouteSinks applies routes to regional clusters with server-side
// apply, through the clients of a childcluster.Manager (built from
// <regional>-kubeconfig). It keeps one sink per regional cluster and builds
// a new one when the cluster's client changes.
type DirectRouteSinks struct {
	clusters *childcluster.Manager

	mu    sync.Mutex
	sinks map[types.NamespacedName]directRouteSink
}

type directRouteSink struct {
	client client.Client
	sink   *delivery.Direct
}

var _ RouteSinks = (*DirectRouteSinks)(nil)

// NewDirectRouteSinks returns RouteSinks that reach regional clusters through clusters.
func NewDirectRouteSinks(clusters *childcluster.Manager) *DirectRouteSinks {
	return &DirectRouteSinks{clusters: clusters, sinks: map[types.NamespacedName]directRouteSink{}}
}

// For returns the direct sink of a regional cluster. The cluster's client
// is uncached, so the sink reads live objects from its API server: callers
// apply only when what they render changed.
func (s *DirectRouteSinks) For(ctx context.Context, regional types.NamespacedName) (delivery.Sink, error) {
	c, err := s.clusters.Client(ctx, regional)
	if err != nil {
		return nil, fmt.Errorf("reaching regional cluster %s: %w", regional, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.sinks[regional]; ok && e.client == c {
		return e.sink, nil
	}
	sink := delivery.NewDirect(c, c, delivery.DirectOptions{})
	s.sinks[regional] = directRouteSink{client: c, sink: sink}
	return sink, nil
}
