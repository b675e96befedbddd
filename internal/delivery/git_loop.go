package delivery

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/apiaryhq/apiary/internal/gitrepo"
)

// maxRetryDelay caps the wait between failed commits or opens.
const maxRetryDelay = 2 * time.Minute

// Start opens the clone, retrying with backoff while the Git server cannot
// be reached, then commits queued changes until ctx ends. It is a
// manager.Runnable that runs on the leader only, like the controllers.
func (g *Git) Start(ctx context.Context) error {
	if !g.openWithRetry(ctx) {
		return nil
	}
	failures := 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-g.kick:
		}
		if !sleep(ctx, g.opts.Window) {
			return nil
		}
		g.drainRetry()
		if err := g.flush(ctx); err != nil {
			failures++
			g.opts.Logger.Error(err, "committing rendered objects failed; retrying", "attempt", failures)
			if !sleepOr(ctx, retryDelay(failures), g.retry) {
				return nil
			}
			g.wake()
			continue
		}
		failures = 0
	}
}

// openWithRetry opens the clone and loads the files it holds; false when ctx
// ended first. Owners that called Apply meanwhile are notified once open.
func (g *Git) openWithRetry(ctx context.Context) bool {
	for attempt := 1; ; attempt++ {
		g.drainRetry()
		start := time.Now()
		repo, err := gitrepo.Open(ctx, g.opts.Repo)
		var files map[string][]byte
		if err == nil {
			files, err = repo.Files()
		}
		// A Refresh asked for while the clone opened (a shard took a unit
		// over) wants the files as of a later fetch.
		for err == nil {
			g.mu.Lock()
			if !g.wantFresh.After(start) {
				break // holding g.mu
			}
			g.mu.Unlock()
			start = time.Now()
			files, err = g.load(ctx, repo)
		}
		if err == nil {
			g.repo, g.head, g.headSHA, g.openErr, g.loadedAt = repo, files, repo.Head(), nil, start
			refused, sweeps := g.refused, g.sweeps
			g.refused, g.sweeps = map[ownerKey]bool{}, nil
			close(g.opened)
			g.mu.Unlock()
			if why := repo.Recloned(); why != nil {
				g.opts.Logger.Info("the clone could not be read; cloned the branch again", "reason", why.Error())
			}
			g.opts.Logger.Info("opened Git repository", "files", len(files), "head", repo.Head())
			// A manager stopped after a push and before its nudge left
			// Flux to find that commit at its next interval: ask once now.
			g.nudgeFlux(ctx)
			g.notices.Notify(refused)
			for _, s := range sweeps {
				if n := g.Sweep(s.kind, s.alive); n > 0 {
					g.opts.Logger.Info("removing the files of owners that are gone", "kind", s.kind, "files", n)
				}
			}
			return true
		}
		g.mu.Lock()
		var refused map[ownerKey]bool
		if g.openErr.Error() != err.Error() {
			// Owners turned away learn the new cause.
			refused = g.refused
			g.refused = map[ownerKey]bool{}
		}
		g.openErr = err
		g.mu.Unlock()
		g.opts.Logger.Error(err, "opening the Git repository failed; retrying", "attempt", attempt)
		g.notices.Notify(refused)
		if !sleepOr(ctx, retryDelay(attempt), g.retry) {
			return false
		}
	}
}

// flush commits every queued change in one commit, then records the commit
// as the revision of the owners whose changes it holds and notifies them.
func (g *Git) flush(ctx context.Context) error {
	g.committing.Lock()
	defer g.committing.Unlock()
	g.mu.Lock()
	if len(g.pending) == 0 {
		g.mu.Unlock()
		return nil
	}
	snap := make(map[string]*pendingFile, len(g.pending))
	changes := map[string][]byte{}
	var deletes []string
	owners := map[ownerKey]bool{}
	for path, p := range g.pending {
		snap[path] = p
		owners[p.owner] = true
		if p.data == nil {
			deletes = append(deletes, path)
		} else {
			changes[path] = p.data
		}
	}
	repo := g.repo
	g.mu.Unlock()

	res, err := repo.Sync(ctx, changes, deletes, g.message(owners))
	g.mu.Lock()
	if err != nil {
		for o := range owners {
			g.ownerErr[o] = err
		}
		g.mu.Unlock()
		g.notices.Notify(owners)
		return err
	}
	rev := res.Commit
	if rev == "" {
		rev = repo.Head()
	}
	for path, p := range snap {
		if p.data == nil {
			delete(g.head, path)
		} else {
			g.head[path] = p.data
		}
		if cur, ok := g.pending[path]; ok && cur == p {
			delete(g.pending, path)
			if g.perOwner[p.owner]--; g.perOwner[p.owner] <= 0 {
				delete(g.perOwner, p.owner)
			}
		}
	}
	for o := range owners {
		g.ownerRev[o], g.ownerErr[o] = rev, nil
	}
	g.mu.Unlock()
	if res.Committed {
		g.syncs.Pushed(rev, time.Now())
		g.opts.Logger.Info("pushed commit", "commit", rev, "files", len(res.Changed), "owners", len(owners))
		g.nudgeFlux(ctx)
	}
	g.notices.Notify(owners)
	return nil
}

// message is the commit message: the configured first line and the owners
// whose objects changed (the file list follows, added by the repository).
func (g *Git) message(owners map[ownerKey]bool) string {
	names := make([]string, 0, len(owners))
	for o := range owners {
		names = append(names, Owner{Kind: o.Kind, Namespace: o.Namespace, Name: o.Name}.String())
	}
	sort.Strings(names)
	const maxListed = 50
	more := 0
	if len(names) > maxListed {
		more, names = len(names)-maxListed, names[:maxListed]
	}
	var b strings.Builder
	b.WriteString(g.opts.Message)
	b.WriteString("\n\nChanged for:\n")
	for _, n := range names {
		fmt.Fprintf(&b, "- %s\n", n)
	}
	if more > 0 {
		fmt.Fprintf(&b, "- and %d more\n", more)
	}
	return b.String()
}

var gitRepositoryGVK = schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "GitRepository"}

// nudgeFlux asks Flux to fetch the new commit now rather than at its next
// interval, as Flux's notification receivers do.
func (g *Git) nudgeFlux(ctx context.Context) {
	f := g.opts.Flux
	if f.Client == nil || f.GitRepository == nil {
		return
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gitRepositoryGVK)
	obj.SetNamespace(f.GitRepository.Namespace)
	obj.SetName(f.GitRepository.Name)
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":%q}}}`, time.Now().Format(time.RFC3339Nano))
	if err := f.Client.Patch(ctx, obj, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		g.opts.Logger.Info("could not ask Flux to fetch the new commit", "gitRepository", f.GitRepository.String(), "error", err.Error())
	}
}

// retryDelay is an exponential backoff with jitter, 1s, 2s, 4s, ... capped.
func retryDelay(attempt int) time.Duration {
	d := time.Second << min(attempt-1, 7)
	d = min(d, maxRetryDelay)
	return d/2 + rand.N(d/2+1)
}

// sleep waits d; false when ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool { return sleepOr(ctx, d, nil) }

// sleepOr waits d or until cut is signalled; false when ctx ended first.
func sleepOr(ctx context.Context, d time.Duration, cut <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	case <-cut:
		return true
	}
}

// Retry cuts short the wait after a failed open or commit: the next
// attempt starts now, e.g. because the credentials or the signing key
// changed. It costs nothing when nothing failed.
func (g *Git) Retry() {
	select {
	case g.retry <- struct{}{}:
	default:
	}
}

// drainRetry forgets a Retry asked for before the attempt that starts now.
func (g *Git) drainRetry() {
	select {
	case <-g.retry:
	default:
	}
}
