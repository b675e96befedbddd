package routes

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/apiaryhq/apiary/internal/childcluster"
	"github.com/apiaryhq/apiary/internal/delivery"
)

// Sinks hands out the delivery sink that holds workspaces' routes for
// one regional cluster, named by its ClusterDeployment: Direct or Git.
type Sinks interface {
	For(ctx context.Context, regional types.NamespacedName) (delivery.Sink, error)
}

// Direct applies routes to regional clusters with server-side
// apply, through the clients of a childcluster.Manager (built from
// <regional>-kubeconfig). It keeps one sink per regional cluster and builds
// a new one when the cluster's client changes.
type Direct struct {
	clusters *childcluster.Manager

	mu    sync.Mutex
	sinks map[types.NamespacedName]directSink
}

type directSink struct {
	client client.Client
	sink   *delivery.Direct
}

var _ Sinks = (*Direct)(nil)

// NewDirect returns Sinks that reach regional clusters through clusters.
func NewDirect(clusters *childcluster.Manager) *Direct {
	return &Direct{clusters: clusters, sinks: map[types.NamespacedName]directSink{}}
}

// For returns the direct sink of a regional cluster. The cluster's client
// is uncached, so the sink reads live objects from its API server: callers
// apply only when what they render changed.
func (s *Direct) For(ctx context.Context, regional types.NamespacedName) (delivery.Sink, error) {
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
	s.sinks[regional] = directSink{client: c, sink: sink}
	return sink, nil
}
