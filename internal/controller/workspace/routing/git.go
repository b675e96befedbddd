package routing

import (
	"context"
	"fmt"
	"time"

	"github.com/fluxcd/pkg/runtime/jitter"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/access"
	"github.com/apiaryhq/apiary/internal/controller/reconciler"
	"github.com/apiaryhq/apiary/internal/delivery"
)

// routesAwaitFlux tells, for routes delivered through Git, what they wait
// for before the regional cluster can hold them: the commit, or Flux
// applying it. It returns "" once Flux applied the commit (or in direct
// mode). A commit known to be applied is not looked at again; otherwise
// the Kustomization is read from the manager's cache.
func (r *Router) routesAwaitFlux(ctx context.Context, obj *workspacesv1.WorkspaceDeployment, v *regionalView, digest string) string {
	d := obj.Status.Routes.Delivery
	if d == nil || d.Mode != delivery.ModeGit {
		return ""
	}
	if d.Digest != digest || d.Revision == "" {
		return "waiting for the routes to be committed to Git"
	}
	if d.SyncedCommit == d.Revision {
		return ""
	}
	sink, err := r.Sinks.For(ctx, v.cluster)
	if err != nil {
		return err.Error()
	}
	g := reconciler.AsGit(sink)
	if g == nil || r.SyncReader == nil {
		return "" // nothing tells when Flux applies the commit: read the routes
	}
	st, err := g.Synced(ctx, r.SyncReader, Owner(obj), d.Revision)
	switch {
	case err != nil:
		return fmt.Sprintf("reading Flux's sync state of the routes: %s", err)
	case !st.Known:
		return "" // no Kustomization to ask: read the routes
	case !st.Synced:
		return st.Message
	}
	d.SyncedCommit, d.SyncedRevision = d.Revision, st.Applied
	return ""
}

// routesAwaiting reports routes that wait for Git or Flux: their URLs are
// known, none is ready. A notice of the Git sink or a change of the
// Kustomization wakes the workspace, so the requeue is only a safety net,
// not a poll.
func (r *Router) routesAwaiting(obj *workspacesv1.WorkspaceDeployment, routes []access.Route, wait string) time.Duration {
	entries := make([]workspacesv1.AccessEntry, 0, len(routes))
	for _, rt := range routes {
		e := workspacesv1.AccessEntry{Name: rt.Endpoint.Name, Protocol: rt.Endpoint.Protocol, URL: rt.URL, Message: wait}
		if !rt.Routable() {
			e.Message = rt.Problem
		}
		entries = append(entries, e)
	}
	obj.Status.Access = entries
	markRoutes(obj, routes, entries, nil)
	return jitter.JitteredIntervalDuration(routeInfraResync)
}
