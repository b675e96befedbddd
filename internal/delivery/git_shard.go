package delivery

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/apiaryhq/apiary/internal/gitrepo"
)

// Sharded Git delivery. Shards commit to one branch and path: every commit
// is made on the remote head just fetched and pushed without force,
// retried on the new head when another shard pushed first, and the
// kustomization.yaml files are generated from that tree, so they list every
// shard's files. What a shard must not do is act on a stale view of the
// files of a unit it did not hold: its sink compares what it renders with
// the files it knows, and would skip a write (or a removal) the branch
// needs. Hence the hand-over: the releasing shard releases a unit only once
// its sinks hold no queued change of the unit (Settled), and the acquiring
// shard reloads its sinks' files from the branch (Refresh) before it first
// acts on the unit. Between the two, the unit's files stay on the branch:
// nothing removes a file because its unit changes shard.

// Settled reports whether the sink holds no change of unit that is queued
// or being committed (none of unknown unit either). A retired sink holds
// none.
func (g *Git) Settled(unit string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, p := range g.pending {
		if p.unit == "" || p.unit == unit {
			g.wake()
			return false
		}
	}
	return true
}

// Refresh reloads the files the sink knows from the remote branch, unless a
// load that began at or after since did so already; concurrent calls share
// one load. A sink whose clone is not open yet loads them once it opens, after
// since. Queued changes stay queued; owners without any forget the commit
// they were last committed in, so their revision becomes the head loaded.
func (g *Git) Refresh(ctx context.Context, since time.Time) error {
	g.mu.Lock()
	if g.retired || !g.loadedAt.Before(since) {
		g.mu.Unlock()
		return nil
	}
	if g.repo == nil {
		if since.After(g.wantFresh) {
			g.wantFresh = since
		}
		g.mu.Unlock()
		return nil
	}
	g.mu.Unlock()
	g.committing.Lock()
	defer g.committing.Unlock()
	g.mu.Lock()
	repo, fresh := g.repo, !g.loadedAt.Before(since) || g.retired
	g.mu.Unlock()
	if fresh {
		return nil
	}
	start := time.Now()
	files, err := g.load(ctx, repo)
	if err != nil {
		return fmt.Errorf("reloading the files of %s from the branch: %w", g.opts.Repo.Path, err)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.head, g.headSHA, g.loadedAt = files, repo.Head(), start
	for o := range g.ownerRev {
		if g.perOwner[o] == 0 {
			delete(g.ownerRev, o)
		}
	}
	return nil
}

// load fetches the branch, resets the clone to it and reads the files under
// the path. Callers hold g.committing, or have not published the clone yet
// (no commit runs before it is).
func (g *Git) load(ctx context.Context, repo *gitrepo.Repo) (map[string][]byte, error) {
	if _, err := repo.Sync(ctx, nil, nil, g.opts.Message); err != nil {
		return nil, err
	}
	return repo.Files()
}

// GitSinks are the Git sinks of one process (the installation's, the
// regional clusters' routes and the tenants'), for the shard hand-over.
// Safe for concurrent use; the zero value is empty.
type GitSinks struct {
	mu  sync.Mutex
	all []*Git
}

// Add registers a sink.
func (s *GitSinks) Add(g *Git) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.all = append(s.all, g)
}

func (s *GitSinks) list() []*Git {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Git(nil), s.all...)
}

// Settled reports whether no sink holds a change of unit that is not
// pushed yet.
func (s *GitSinks) Settled(unit string) bool {
	for _, g := range s.list() {
		if !g.Settled(unit) {
			return false
		}
	}
	return true
}

// Refresh reloads every sink's files from its branch (Git.Refresh).
func (s *GitSinks) Refresh(ctx context.Context, since time.Time) error {
	for _, g := range s.list() {
		if err := g.Refresh(ctx, since); err != nil {
			return err
		}
	}
	return nil
}
