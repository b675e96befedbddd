package manager

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	"github.com/apiaryhq/apiary/internal/shard"
)

// inClusterNamespaceFile holds the namespace of an in-cluster manager (a
// variable for tests).
var inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// sharded completes the options of a shard: leader election on, with the
// shard's own Lease in a known namespace (the shards read each other's).
func (o Options) sharded() (Options, error) {
	if err := o.Shard.Validate(); err != nil {
		return o, err
	}
	if !o.Shard.Enabled() {
		return o, nil
	}
	o.LeaderElection = true
	o.LeaderElectionID = shard.LeaseName(o.Shard.Index)
	if o.LeaderElectionNamespace == "" {
		ns, err := os.ReadFile(inClusterNamespaceFile)
		if err != nil || strings.TrimSpace(string(ns)) == "" {
			return o, errors.New("sharding needs the namespace of the shards' Leases: set --leader-election-namespace")
		}
		o.LeaderElectionNamespace = strings.TrimSpace(string(ns))
	}
	return o, nil
}

// clusterWide reports whether this process runs the controllers that are
// not per cluster (WorkspaceClass, TenantQuota, the Git regional routes
// controller): shard 0, or the only process.
func (o Options) clusterWide() bool {
	return !o.Shard.Enabled() || o.Shard.Index == 0
}

// forgetUnit stops the child caches of the clusters of a unit this shard
// released.
func (d *deps) forgetUnit(mgr ctrl.Manager) func(context.Context, shard.Unit) {
	return func(ctx context.Context, u shard.Unit) {
		if u.Kind == shard.KindClusterDeployment {
			d.children.Forget(u.NamespacedName)
			return
		}
		c := &infrav1.Colony{}
		if err := mgr.GetCache().Get(ctx, u.NamespacedName, c); err != nil {
			ctrl.LoggerFrom(ctx).Error(fmt.Errorf("reading released %s: %w", u, err), "child caches of the unit stay open")
			return
		}
		for _, name := range shard.ClusterNames(c) {
			d.children.Forget(types.NamespacedName{Namespace: c.Namespace, Name: name})
		}
	}
}
