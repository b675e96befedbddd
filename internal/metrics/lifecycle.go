package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// Workspace lifecycle events: stops, starts, expiries and the GPUs stops gave back.
var (
	workspaceStops = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "workspace_stops_total",
		Help: "Workspaces that finished stopping, by why: Requested (spec.lifecycle.stopped), Expired, Idle (culled).",
	}, []string{"reason"})
	workspaceStarts = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: Namespace, Name: "workspace_starts_total",
		Help: "Stopped workspaces whose workloads were scaled back after they were admitted again.",
	})
	gpusReleasedByStop = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "gpus_released_by_stop_total",
		Help: "GPUs whose admission stopping workspaces gave back, by cluster, GPU resource and why the workspace stopped.",
	}, []string{"cluster_deployment", "resource", "reason"})
	workspaceExpirations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "workspace_expirations_total",
		Help: "Workspaces that reached their expiry, by what was done: Stop or Delete.",
	}, []string{"policy"})
)

// ObserveStop counts a workspace that finished stopping.
func ObserveStop(why workspacesv1.StopReason) { workspaceStops.WithLabelValues(string(why)).Inc() }

// ObserveGPUsReleased counts the GPUs a stopping workspace gave back.
func ObserveGPUsReleased(why workspacesv1.StopReason, cluster, resource string, gpus int64) {
	if gpus > 0 {
		gpusReleasedByStop.WithLabelValues(cluster, resource, string(why)).Add(float64(gpus))
	}
}

// ObserveStart counts a stopped workspace scaled back.
func ObserveStart() { workspaceStarts.Inc() }

// ObserveExpiry counts a workspace that expired, by policy.
func ObserveExpiry(policy string) { workspaceExpirations.WithLabelValues(policy).Inc() }
