package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Results of a workspace activity probe (the result label of
// apiary_workspace_activity_probes_total).
const (
	// ActivityKnown: the source said when the workspace was last active.
	ActivityKnown = "known"
	// ActivityUnknown: the source answered without a usable time.
	ActivityUnknown = "unknown"
	// ActivityError: the source could not be asked, failed, timed out or
	// gave an answer that could not be read.
	ActivityError = "error"
	// ActivityRefused: the target was not asked because what it names is
	// not what the workspace's release made (a Service of type
	// ExternalName).
	ActivityRefused = "refused"
)

// ActivityResults are every value of the result label.
var ActivityResults = []string{ActivityKnown, ActivityUnknown, ActivityError, ActivityRefused}

// ActivityProbeBuckets are the buckets of activity probe durations, 5 ms to 30 s.
var ActivityProbeBuckets = prometheus.ExponentialBucketsRange(0.005, 30, 10)

var (
	activityProbes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "workspace_activity_probes_total",
		Help: "Probes asking a workspace when it was last active, by source (the probe's format) and result: known, unknown, error or refused.",
	}, []string{"source", "result"})
	activityProbeDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "workspace_activity_probe_duration_seconds",
		Help:    "Duration of workspace activity probes by source, including the wait for a free probe slot.",
		Buckets: ActivityProbeBuckets,
	}, []string{"source"})
)

// ObserveActivityProbe records one activity probe of a source (a fixed set
// of formats, never a user value) with its result, one of ActivityResults
// (anything else counts as ActivityError), and its duration.
func ObserveActivityProbe(source, result string, d time.Duration) {
	switch result {
	case ActivityKnown, ActivityUnknown, ActivityError, ActivityRefused:
	default:
		result = ActivityError
	}
	activityProbes.WithLabelValues(source, result).Inc()
	activityProbeDuration.WithLabelValues(source).Observe(d.Seconds())
}
