package manager

import (
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller"
	"github.com/apiaryhq/apiary/internal/metrics"
	"github.com/apiaryhq/apiary/internal/preflight"
	"github.com/apiaryhq/apiary/internal/shard"
	"github.com/apiaryhq/apiary/internal/version"
)

// setMetricsSource lets Apiary's state metrics read the manager's cache and
// child clusters: Colonies once the gate of their controller is open,
// workspaces and quotas once that of theirs is, and both only while this
// replica is elected (a standby reports no state, so sums over replicas
// count once). With sharding every shard is elected: each reports the
// workspaces of its own buckets (its cache holds only those, and the new
// ones every shard sees until they are labelled) and its own child caches;
// shard 0 alone reports Colonies and quotas, which every shard caches
// whole. Sums over shards count each once.
func setMetricsSource(mgr ctrl.Manager, opts Options, d *deps, gates []*preflight.Gate) {
	metrics.SetBuildInfo(version.Version, version.Commit)
	elected := mgr.Elected()
	open := func(name string, clusterWide bool) func() bool {
		return func() bool {
			select {
			case <-elected:
			default:
				return false
			}
			if clusterWide && !opts.clusterWide() {
				return false
			}
			for _, g := range gates {
				if g.Name == name {
					return g.Open()
				}
			}
			return false
		}
	}
	src := &metrics.Source{
		Reader:     mgr.GetCache(),
		Colonies:   open(controller.ColonyEntry, true),
		Workspaces: open(controller.WorkspaceEntry, false),
		Quotas:     open(controller.WorkspaceEntry, true),
		Children:   d.children,
	}
	if opts.Shard.Enabled() {
		src.Counts = func(w *workspacesv1.WorkspaceDeployment) bool {
			return opts.Shard.DesiresBucket(w.Labels[shard.BucketLabel])
		}
	}
	metrics.SetSource(src)
}

// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// metricsOptions serves the metrics over plain HTTP, or with
// MetricsSecure over HTTPS to clients the API server authenticates and
// authorises for GET /metrics (controller-runtime's filter, as kubebuilder's
// scaffold and kube-rbac-proxy do).
func metricsOptions(opts Options) metricsserver.Options {
	o := metricsserver.Options{BindAddress: opts.MetricsBindAddress}
	if opts.MetricsSecure {
		o.SecureServing = true
		o.CertDir = opts.MetricsCertDir
		o.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	return o
}
