package managertest

import (
	"context"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	apiaryscheme "github.com/apiaryhq/apiary/internal/scheme"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
)

// Reactions times, per workspace, how long after its ServiceSet reported
// the release Deployed the workspace read Running, both as the benchmark's
// own watches saw them (one clock, one API server).
type Reactions struct {
	mu       sync.Mutex
	deployed map[string]time.Time // workspace name → first seen Deployed
	running  map[string]time.Time
	sets     map[string]struct{} // ServiceSet names seen
}

// WatchReactions watches the ServiceSets and workspaces of ns on the
// management cluster cfg reaches, until ctx ends.
func WatchReactions(ctx context.Context, cfg *rest.Config, ns string) (*Reactions, error) {
	wc, err := client.NewWithWatch(cfg, client.Options{Scheme: apiaryscheme.New()})
	if err != nil {
		return nil, err
	}
	r := &Reactions{deployed: map[string]time.Time{}, running: map[string]time.Time{}, sets: map[string]struct{}{}}
	go r.follow(ctx, wc, &k0rdentv1beta1.ServiceSetList{}, ns, func(o client.Object) {
		ss := o.(*k0rdentv1beta1.ServiceSet)
		r.mu.Lock()
		r.sets[ss.Name] = struct{}{}
		r.mu.Unlock()
		for _, s := range ss.Status.Services {
			if s.State == k0rdentv1beta1.ServiceStateDeployed {
				r.first(r.deployed, ss.Labels[plan.WorkspaceLabel])
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

func (r *Reactions) first(m map[string]time.Time, name string) {
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
func (r *Reactions) follow(ctx context.Context, wc client.WithWatch, list client.ObjectList, ns string, seen func(client.Object)) {
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

// Counts returns how many ServiceSets the watches saw and how many
// workspaces they saw Running: a benchmark waits on them instead of
// listing every object again and again, which would load the API server it
// measures.
func (r *Reactions) Counts() (serviceSets, running int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.sets), len(r.running)
}

// Figures returns the median and the largest reaction, over the
// workspaces seen both Deployed and Running, and how many those were.
func (r *Reactions) Figures() (p50, max time.Duration, n int) {
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
