package controllers_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	dto "github.com/prometheus/client_model/go"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/controllers"
)

// reactions times, per workspace, how long after its ServiceSet reported
// the release Deployed the workspace read Running, both as the benchmark's
// own watches saw them (one clock, one API server).
type reactions struct {
	mu       sync.Mutex
	deployed map[string]time.Time // workspace name → first seen Deployed
	running  map[string]time.Time
}

// watchReactions watches the ServiceSets and workspaces of ns until ctx ends.
func watchReactions(ctx context.Context, ns string) (*reactions, error) {
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		return nil, err
	}
	r := &reactions{deployed: map[string]time.Time{}, running: map[string]time.Time{}}
	go r.follow(ctx, wc, &k0rdentv1beta1.ServiceSetList{}, ns, func(o client.Object) {
		ss := o.(*k0rdentv1beta1.ServiceSet)
		for _, s := range ss.Status.Services {
			if s.State == k0rdentv1beta1.ServiceStateDeployed {
				r.first(r.deployed, ss.Labels[controllers.WorkspaceLabel])
			}
		}
	})
	go r.follow(ctx, wc, &workspacesv1.WorkspaceDeploymentList{}, ns, func(o client.Object) {
		if w := o.(*workspacesv1.WorkspaceDeployment); w.Status.Phase == workspacesv1.PhaseRunning {
			r.first(r.running, w.Name)
		}
	})
	return r, nil
}

func (r *reactions) first(m map[string]time.Time, name string) {
	if name == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := m[name]; !ok {
		m[name] = time.Now()
	}
}

// follow watches a list's kind in ns, watching again when the server ends
// a watch, and hands every object seen to seen.
func (r *reactions) follow(ctx context.Context, wc client.WithWatch, list client.ObjectList, ns string, seen func(client.Object)) {
	for ctx.Err() == nil {
		w, err := wc.Watch(ctx, list, client.InNamespace(ns))
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			continue
		}
		for ev := range w.ResultChan() {
			if o, ok := ev.Object.(client.Object); ok && (ev.Type == watch.Added || ev.Type == watch.Modified) {
				seen(o)
			}
		}
	}
}

// figures returns the median and the largest reaction, over the
// workspaces seen both Deployed and Running, and how many those were.
func (r *reactions) figures() (p50, max time.Duration, n int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ds []time.Duration
	for name, d := range r.deployed {
		if run, ok := r.running[name]; ok {
			ds = append(ds, max0(run.Sub(d)))
		}
	}
	if len(ds) == 0 {
		return 0, 0, 0
	}
	slices.Sort(ds)
	return ds[len(ds)/2], ds[len(ds)-1], len(ds)
}

func max0(d time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	return d
}

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
			if labelValue(m, "name") == controller {
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
			if labelValue(m, "name") == controller {
				depth += m.GetGauge().GetValue()
			}
		}
	}
	return depth
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
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
