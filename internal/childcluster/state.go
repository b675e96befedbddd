package childcluster

import (
	"sort"

	"k8s.io/apimachinery/pkg/types"
)

// ClusterState is what the Manager knows of one child cluster, for metrics.
type ClusterState struct {
	Cluster types.NamespacedName
	// CacheOpen is true while an informer cache of the cluster runs (or starts).
	CacheOpen bool
	// Unreachable is true while the cluster's cache cannot reach its API
	// server, or when the last start of a cache failed because it could not.
	Unreachable bool
}

// States returns, sorted by cluster, the state of every cluster with a
// cache, or whose last cache start could not reach it. It makes no request.
func (m *Manager) States() []ClusterState {
	m.mu.Lock()
	byCluster := map[types.NamespacedName]*ClusterState{}
	for cd, e := range m.clusters {
		if e.cache != nil {
			byCluster[cd] = &ClusterState{Cluster: cd, CacheOpen: true, Unreachable: IsUnreachable(e.cache.LastError())}
		}
	}
	for cd, down := range m.unreachable {
		if s, ok := byCluster[cd]; ok {
			s.Unreachable = s.Unreachable || (down && !s.CacheOpen)
		} else if down {
			byCluster[cd] = &ClusterState{Cluster: cd, Unreachable: true}
		}
	}
	m.mu.Unlock()
	out := make([]ClusterState, 0, len(byCluster))
	for _, s := range byCluster {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Cluster.String() < out[j].Cluster.String() })
	return out
}

// setUnreachable records whether the last cache start of cd could not reach it.
func (m *Manager) setUnreachable(cd types.NamespacedName, down bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if down {
		m.unreachable[cd] = true
	} else {
		delete(m.unreachable, cd)
	}
}
