package gitrepo

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// RemoveTree removes Path and everything under it, its kustomization.yaml
// files included, in one commit, for a folder whose target is gone. Like
// Sync, it fetches first and retries a non-fast-forward push on the new
// head; a Path that is already gone commits nothing.
func (r *Repo) RemoveTree(ctx context.Context, message string) (Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.retryPush(ctx, func() (Result, error) { return r.removeOnce(ctx, message) })
}

// removeOnce removes Path from the freshly fetched head and commits.
func (r *Repo) removeOnce(ctx context.Context, message string) (Result, error) {
	if err := r.fetch(ctx); err != nil {
		return Result{}, err
	}
	if err := r.resetToRemote(); err != nil {
		return Result{}, err
	}
	root := filepath.Join(r.opts.Dir, filepath.FromSlash(r.opts.Path))
	var rels []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root && os.IsNotExist(err) {
				return fs.SkipAll
			}
			return err
		}
		if d.Type().IsRegular() {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			rels = append(rels, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		return Result{}, fmt.Errorf("listing %s: %w", r.opts.Path, err)
	}
	if len(rels) == 0 {
		return Result{}, nil // already gone
	}
	r.clean = false
	if err := os.RemoveAll(root); err != nil {
		return Result{}, fmt.Errorf("removing %s: %w", r.opts.Path, err)
	}
	changed, summary, err := r.stage(rels)
	if err != nil {
		return Result{}, err
	}
	return r.commitAndPush(ctx, changed, summary, message)
}
