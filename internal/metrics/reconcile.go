package metrics

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
)

var (
	reconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "reconcile_duration_seconds",
		Help: "Duration of the reconciles of an Apiary object, by kind, name and namespace " +
			"(the shape of Flux's gotk_reconcile_duration_seconds); the series go when the object does.",
		Buckets: ReconcileBuckets,
	}, []string{"kind", "name", "namespace"})

	timeToRunning = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "workspace_time_to_running_seconds",
		Help: "Time from a WorkspaceDeployment's creation to its first Running phase, observed once per workspace " +
			"(workspaces that failed on the way are not observed).",
		Buckets: []float64{5, 10, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400},
	})

	// running remembers the workspaces whose time to Running was observed,
	// by key, with their UID, so that a repeated transition (a stale cache
	// read) is not observed twice. Entries go with the workspace.
	runningMu sync.Mutex
	running   = map[types.NamespacedName]types.UID{}
)

// ObserveReconcile records the duration of a reconcile of an object that
// started at start. Call it deferred, after the object was read.
func ObserveReconcile(kind string, key types.NamespacedName, start time.Time) {
	reconcileDuration.WithLabelValues(kind, key.Name, key.Namespace).Observe(time.Since(start).Seconds())
}

// ForgetObject drops the series of an object that is gone.
func ForgetObject(kind string, key types.NamespacedName) {
	reconcileDuration.DeleteLabelValues(kind, key.Name, key.Namespace)
	if kind == KindWorkspaceDeployment {
		runningMu.Lock()
		delete(running, key)
		runningMu.Unlock()
	}
}

// ObserveTimeToRunning records that a workspace created at created turned
// Running for the first time, once per workspace (key and UID).
func ObserveTimeToRunning(key types.NamespacedName, uid types.UID, created time.Time) {
	runningMu.Lock()
	seen := running[key] == uid
	running[key] = uid
	runningMu.Unlock()
	if !seen {
		timeToRunning.Observe(time.Since(created).Seconds())
	}
}
