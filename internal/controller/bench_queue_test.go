package controller_test

import (
	"sync/atomic"
	"time"

	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/apiaryhq/apiary/internal/controller/controllertest"
)

// queueWait is the sum and count of workqueue_queue_duration_seconds of a
// controller: how long its requests waited in the queue before a worker
// took them.
func queueWait(controller string) (sum float64, count uint64) {
	families, _ := ctrlmetrics.Registry.Gather()
	for _, f := range families {
		if f.GetName() != "workqueue_queue_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			if controllertest.LabelValue(m, "name") == controller {
				sum += m.GetHistogram().GetSampleSum()
				count += m.GetHistogram().GetSampleCount()
			}
		}
	}
	return sum, count
}

// queueDepth is a controller's workqueue_depth over every priority.
func queueDepth(controller string) float64 {
	families, _ := ctrlmetrics.Registry.Gather()
	depth := 0.0
	for _, f := range families {
		if f.GetName() != "workqueue_depth" {
			continue
		}
		for _, m := range f.GetMetric() {
			if controllertest.LabelValue(m, "name") == controller {
				depth += m.GetGauge().GetValue()
			}
		}
	}
	return depth
}

// samplePeakDepth records the largest depth of a controller's queue until stop.
func samplePeakDepth(controller string, peak *atomic.Int64, stop <-chan struct{}) {
	for {
		if d := int64(queueDepth(controller)); d > peak.Load() {
			peak.Store(d)
		}
		select {
		case <-stop:
			return
		case <-time.After(250 * time.Millisecond):
		}
	}
}
