package workspace

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/workspace/routing"
	"github.com/apiaryhq/apiary/internal/wake"
)

// routeAccess is the routing step (package routing). The clusters whose
// routing infrastructure the routes read, a commit Flux has not applied,
// a port the pool lacks, a host name another holds and a rival claim of a
// host name it holds are what wakes the workspace again.
func (r *Reconciler) routeAccess(ctx context.Context, w *workspaceRun) (stepResult, error) {
	t := &routing.Target{Obj: w.obj, Class: w.class, CD: w.cd, CDKey: w.cdKey}
	after := r.routing.Route(ctx, t)
	for _, c := range t.Follows {
		w.waitFor(clusterTopic(waitRoutes, c))
	}
	if t.AwaitingSync {
		w.waitFor(wake.Topic{Kind: waitSync})
	}
	if t.AwaitingPort {
		w.waitFor(wake.Topic{Kind: waitPorts})
	}
	if t.AwaitingHost {
		w.waitFor(wake.Topic{Kind: waitHosts})
	}
	for _, h := range t.Hosts {
		w.waitFor(wake.Topic{Kind: waitHostRival, Key: h})
	}
	if after > 0 {
		return stopWith(after), nil
	}
	return proceed, nil
}

// hostsChanged returns the host names a workspace's routes hold after an
// update and not before, and whether they let go of one.
func hostsChanged(old, updated *workspacesv1.WorkspaceDeployment) (gained []string, lost bool) {
	hosts := func(w *workspacesv1.WorkspaceDeployment) map[string]bool {
		out := map[string]bool{}
		if w.Status.Routes != nil {
			for _, h := range w.Status.Routes.Hosts {
				out[h] = true
			}
		}
		return out
	}
	before, after := hosts(old), hosts(updated)
	for h := range after {
		if !before[h] {
			gained = append(gained, h)
		}
	}
	for h := range before {
		lost = lost || !after[h]
	}
	return gained, lost
}

// hostRivals wakes the other holders of host names a workspace's routes
// now claim: holders of different shards may claim one host at once, and
// the younger backs off once it sees the other's claim.
func (r *Reconciler) hostRivals(w *workspacesv1.WorkspaceDeployment, hosts []string) []reconcile.Request {
	topics := make([]wake.Topic, 0, len(hosts))
	for _, h := range hosts {
		topics = append(topics, wake.Topic{Kind: waitHostRival, Key: h})
	}
	self := client.ObjectKeyFromObject(w)
	out := r.wake(topics...)
	kept := out[:0]
	for _, req := range out {
		if req.NamespacedName != self {
			kept = append(kept, req)
		}
	}
	return kept
}
