package workspace

import (
	"context"

	"github.com/apiaryhq/apiary/internal/controller/workspace/routing"
	"github.com/apiaryhq/apiary/internal/wake"
)

// routeAccess is the routing step (package routing). The clusters whose
// routing infrastructure the routes read, a commit Flux has not applied
// and a port the pool lacks are what wakes the workspace again.
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
	if after > 0 {
		return stopWith(after), nil
	}
	return proceed, nil
}
