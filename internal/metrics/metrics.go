// Package metrics defines Apiary's own Prometheus metrics: what only Apiary
// knows, on top of controller-runtime's generic controller, workqueue and
// REST-client metrics and of the per-object state that kube-state-metrics
// exports from the objects' status (the chart's custom-resource-state
// configuration). Every collector is registered once, at package
// initialisation, on controller-runtime's metrics.Registry, so the manager's
// metrics endpoint serves them.
//
// Three kinds of metric live here:
//
//   - events observed where they happen: the time from a workspace's creation
//     to Running, the duration of every reconcile (in the shape of Flux's
//     gotk_reconcile_duration_seconds), Git commits, pushes and push retries,
//     the time from a pushed commit to Flux applying it, and the probes asking
//     workspaces when they were last active;
//   - state read at scrape time from the manager's informer cache and from
//     the child-cluster manager (State): workspaces by phase and waiting
//     reason, admitted, free and offered GPUs per cluster, GPU quota use,
//     child-cluster caches and their reachability. Scraping adds no API
//     request, and only the elected replica reports it, so that a standby
//     replica does not double the numbers;
//   - apiary_build_info.
//
// Labels are bounded by what kube-state-metrics would use: objects
// (kind/name/namespace for reconcile durations, like Flux), clusters, quotas,
// Git repositories and fixed sets of reasons and results, never a user value
// or an error string.
package metrics

import (
	"runtime"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Namespace prefixes every metric of this package.
const Namespace = "apiary"

// The kinds of Apiary's reconcilers, as the kind label of reconcile durations.
const (
	KindColony              = "Colony"
	KindWorkspaceClass      = "WorkspaceClass"
	KindWorkspaceDeployment = "WorkspaceDeployment"
	KindTenantQuota         = "TenantQuota"
)

// ReconcileBuckets are the buckets of reconcile durations: Flux's
// gotk_reconcile_duration_seconds buckets, 10 ms to 30 min.
var ReconcileBuckets = prometheus.ExponentialBucketsRange(0.01, 1800, 10)

var (
	buildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: Namespace, Name: "build_info",
		Help: "Always 1; the labels give the version and commit of the running manager, and the Go version it was built with.",
	}, []string{"version", "commit", "goversion"})

	collectors = []prometheus.Collector{
		buildInfo, reconcileDuration, timeToRunning,
		gitCommits, gitPushes, gitPushRetries, gitSyncLatency,
		state, shardInfo, shardUnits,
		activityProbes, activityProbeDuration,
		workspaceStops, workspaceStarts, gpusReleasedByStop, workspaceExpirations,
	}
)

func init() {
	ctrlmetrics.Registry.MustRegister(collectors...)
}

// Collectors returns every collector of this package, for tests and tools
// that list Apiary's metrics.
func Collectors() []prometheus.Collector { return collectors }

// SetBuildInfo records the version and commit of the running binary.
func SetBuildInfo(version, commit string) {
	buildInfo.Reset()
	buildInfo.WithLabelValues(version, commit, runtime.Version()).Set(1)
}
