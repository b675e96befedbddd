package workspace

import (
	"context"
	"sync"
	"time"

	"github.com/fluxcd/pkg/runtime/jitter"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/apiaryhq/apiary/internal/childcluster"
)

// How a stopped workspace is kept stopped (docs/lifecycle.md): it holds a
// watch of its child's pods, a pod event of the cluster wakes it
// (waitStopped), and halt scales its release back when a pod runs in its
// child namespace, or in full every stoppedResync.

// stoppedResync bounds how long a stopped workspace goes without a full
// check that its workloads stay scaled away (scaledown.Stop: one list per
// workload kind on the child, 5 requests), on top of the child's pod
// events, which trigger one as soon as a pod runs in its child namespace.
// A check woken by a pod event reads the pod cache only: it costs no API
// request while no pod runs there. At steady state a stopped workspace
// costs 12 full checks, 60 list requests to its child's API server, an
// hour.
const stoppedResync = 5 * time.Minute

// stoppedQuiet reports whether no pod runs in a stopped workspace's child
// namespace, from the child's pod cache: then there is nothing to scale
// away and nothing to read. False when the cache cannot say.
func (r *Reconciler) stoppedQuiet(ctx context.Context, w *workspaceRun) bool {
	cc, err := r.Children.Watch(ctx, w.cdKey, workspaceWatchOwner(w.obj), childcluster.WatchOptions{Pods: true})
	if err != nil {
		return false
	}
	pods, err := cc.ListPods(ctx)
	if err != nil {
		return false
	}
	ns := childNamespace(w.obj.Name)
	for i := range pods {
		p := &pods[i]
		if p.Namespace == ns && p.DeletionTimestamp.IsZero() && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			return false
		}
	}
	return true
}

// watchStopped keeps a stopped workspace in view: a pod event of its
// child cluster wakes it (waitStopped), so that pods of a workload scaled
// up, or installed by a Helm action in flight when it stopped, are scaled
// away as they appear; stoppedResync bounds a missed event.
func (r *Reconciler) watchStopped(ctx context.Context, w *workspaceRun) (stepResult, error) {
	if _, err := r.Children.Watch(ctx, w.cdKey, workspaceWatchOwner(w.obj), childcluster.WatchOptions{Pods: true}); err != nil {
		w.waitFor(clusterTopic(waitChild, w.cdKey))
		return stopWith(30 * time.Second), nil
	}
	w.waitFor(clusterTopic(waitStopped, w.cdKey))
	return stopWith(jitter.JitteredIntervalDuration(stoppedResync)), nil
}

// stopChecks remembers when each stopped workspace's workloads were last
// checked in full (scaledown.Stop), so that pod events and requeues between
// checks read only the pod cache.
type stopChecks struct {
	mu sync.Mutex
	at map[types.UID]time.Time
}

// due reports whether a stopped workspace is due a full check: never
// checked by this process, or not for stoppedResync.
func (c *stopChecks) due(uid types.UID, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.at[uid]
	return !ok || now.Sub(at) >= stoppedResync
}

// done records a full check.
func (c *stopChecks) done(uid types.UID, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at == nil {
		c.at = map[types.UID]time.Time{}
	}
	c.at[uid] = now
}

// forget drops a workspace that started or went.
func (c *stopChecks) forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.at, uid)
}
