package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// kustomizationFile is the file name Apiary generates in every directory under Path.
const kustomizationFile = "kustomization.yaml"

// Sync fetches the branch, resets the clone to the remote head, writes changes
// and removes deletes (both relative to Path), regenerates kustomization.yaml
// files, builds the tree with kustomize and, when anything changed, commits
// and pushes. A non-fast-forward push is retried on the new head up to
// MaxPushRetries times; the push is never forced.
func (r *Repo) Sync(ctx context.Context, changes map[string][]byte, deletes []string, message string) (Result, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := validate(changes, deletes); err != nil {
		return Result{}, err
	}
	var lastErr error
	for attempt := 0; attempt <= r.opts.MaxPushRetries; attempt++ {
		if attempt > 0 {
			if err := backoff(ctx, attempt); err != nil {
				return Result{}, fmt.Errorf("retrying push to %s: %w", r.opts.Branch, err)
			}
		}
		res, err := r.syncOnce(ctx, changes, deletes, message)
		if err == nil || !errors.Is(err, errNonFastForward) {
			return res, err
		}
		lastErr = err
	}
	return Result{}, fmt.Errorf("%w: branch %s kept moving after %d retries: %w",
		ErrPushRejected, r.opts.Branch, r.opts.MaxPushRetries, lastErr)
}

var errNonFastForward = errors.New("remote branch moved")

func validate(changes map[string][]byte, deletes []string) error {
	for p := range changes {
		if _, err := cleanRel(p); err != nil {
			return fmt.Errorf("invalid change path %q: %w", p, err)
		}
		if path.Base(p) == kustomizationFile {
			return fmt.Errorf("invalid change path %q: %s files are generated", p, kustomizationFile)
		}
	}
	for _, p := range deletes {
		if _, err := cleanRel(p); err != nil {
			return fmt.Errorf("invalid delete path %q: %w", p, err)
		}
	}
	return nil
}

func (r *Repo) syncOnce(ctx context.Context, changes map[string][]byte, deletes []string, message string) (Result, error) {
	if err := r.fetch(ctx); err != nil {
		return Result{}, err
	}
	if err := r.resetToRemote(); err != nil {
		return Result{}, err
	}
	root := filepath.Join(r.opts.Dir, filepath.FromSlash(r.opts.Path))
	if err := apply(root, changes, deletes); err != nil {
		return Result{}, err
	}
	if err := writeKustomizations(root); err != nil {
		return Result{}, err
	}
	if err := build(root); err != nil {
		return Result{}, err
	}
	w, err := r.repo.Worktree()
	if err != nil {
		return Result{}, fmt.Errorf("opening worktree %s: %w", r.opts.Dir, err)
	}
	changed, summary, err := r.stage(w)
	if err != nil {
		return Result{}, err
	}
	if len(changed) == 0 {
		return Result{}, nil
	}
	msg := strings.TrimRight(message, "\n") + "\n\n" + summary
	hash, err := w.Commit(msg, &git.CommitOptions{Author: &object.Signature{
		Name: r.opts.Author.Name, Email: r.opts.Author.Email, When: time.Now(),
	}})
	if err != nil {
		return Result{}, fmt.Errorf("committing to %s: %w", r.opts.Branch, err)
	}
	if r.beforePush != nil {
		r.beforePush()
	}
	if err := r.push(ctx); err != nil {
		return Result{}, err
	}
	r.head, r.ready = hash, true
	// Keep the tracking ref equal to what the remote now holds.
	_ = r.repo.Storer.SetReference(plumbing.NewHashReference(
		plumbing.NewRemoteReferenceName(remoteName, r.opts.Branch), hash))
	return Result{Committed: true, Commit: hash.String(), Changed: changed}, nil
}

func (r *Repo) push(ctx context.Context) error {
	ref := plumbing.NewBranchReferenceName(r.opts.Branch)
	err := r.repo.PushContext(ctx, &git.PushOptions{
		RemoteName: remoteName,
		RefSpecs:   []config.RefSpec{config.RefSpec(fmt.Sprintf("%s:%s", ref, ref))},
		Auth:       r.opts.Auth,
	})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, git.NoErrAlreadyUpToDate):
		return nil
	}
	err = classify(err)
	if IsAuthFailed(err) || IsUnreachable(err) {
		return fmt.Errorf("pushing to %s branch %s: %w", redactURL(r.opts.URL), r.opts.Branch, err)
	}
	if isNonFastForward(err) {
		return fmt.Errorf("pushing to %s branch %s: %w: %w", redactURL(r.opts.URL), r.opts.Branch, errNonFastForward, err)
	}
	return fmt.Errorf("pushing to %s branch %s: %w: %w", redactURL(r.opts.URL), r.opts.Branch, ErrPushRejected, err)
}

// apply writes changes and removes deletes under root.
func apply(root string, changes map[string][]byte, deletes []string) error {
	for _, p := range deletes {
		if _, ok := changes[p]; ok {
			continue
		}
		if err := os.Remove(filepath.Join(root, filepath.FromSlash(p))); err != nil && !os.IsNotExist(err) {
			return fmt.Errorf("deleting %s: %w", p, err)
		}
	}
	for _, p := range sortedKeys(changes) {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return fmt.Errorf("creating directory for %s: %w", p, err)
		}
		if err := os.WriteFile(full, changes[p], 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", p, err)
		}
	}
	return nil
}

func isYAML(name string) bool {
	return (strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")) && name != kustomizationFile
}

// writeKustomizations regenerates kustomization.yaml in every directory under
// root that holds YAML (directly or below), removes it (and empty
// directories) elsewhere, and always writes one at root.
func writeKustomizations(root string) error {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", root, err)
	}
	_, err := writeKustomization(root, true)
	return err
}

// writeKustomization handles one directory and reports whether it holds YAML.
func writeKustomization(dir string, isRoot bool) (bool, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, fmt.Errorf("listing %s: %w", dir, err)
	}
	var resources []string
	for _, e := range entries {
		switch {
		case e.IsDir():
			has, err := writeKustomization(filepath.Join(dir, e.Name()), false)
			if err != nil {
				return false, err
			}
			if has {
				resources = append(resources, e.Name())
			}
		case e.Type().IsRegular() && isYAML(e.Name()):
			resources = append(resources, e.Name())
		}
	}
	kfile := filepath.Join(dir, kustomizationFile)
	if len(resources) == 0 && !isRoot {
		if err := os.Remove(kfile); err != nil && !os.IsNotExist(err) {
			return false, fmt.Errorf("removing %s: %w", kfile, err)
		}
		_ = os.Remove(dir) // only succeeds when empty
		return false, nil
	}
	sort.Strings(resources)
	k := types.Kustomization{
		TypeMeta:  types.TypeMeta{APIVersion: types.KustomizationVersion, Kind: types.KustomizationKind},
		Resources: resources,
	}
	if isRoot {
		// A name keeps an empty root buildable: kustomize refuses a
		// kustomization without any field, and Flux must be able to
		// apply (and prune to) an empty tree.
		k.MetaData = &types.ObjectMeta{Name: "apiary"}
	}
	data, err := yaml.Marshal(&k)
	if err != nil {
		return false, fmt.Errorf("encoding %s: %w", kfile, err)
	}
	if err := os.WriteFile(kfile, data, 0o644); err != nil {
		return false, fmt.Errorf("writing %s: %w", kfile, err)
	}
	return true, nil
}

// build runs kustomize on root as Flux would.
func build(root string) error {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	if _, err := k.Run(filesys.MakeFsOnDisk(), root); err != nil {
		return fmt.Errorf("%w: building %s: %w", ErrInvalidTree, filepath.Base(root), err)
	}
	return nil
}

// stage adds every change under Path to the index and returns the changed
// paths (relative to Path) and a one-line-per-file summary for the message.
func (r *Repo) stage(w *git.Worktree) ([]string, string, error) {
	st, err := w.Status()
	if err != nil {
		return nil, "", fmt.Errorf("status of %s: %w", r.opts.Dir, err)
	}
	prefix := r.opts.Path + "/"
	var changed []string
	lines := map[string]string{}
	for file, s := range st {
		if !strings.HasPrefix(file, prefix) || (s.Worktree == git.Unmodified && s.Staging == git.Unmodified) {
			continue
		}
		rel := strings.TrimPrefix(file, prefix)
		verb := "M"
		switch {
		case s.Worktree == git.Deleted:
			verb = "D"
			if _, err := w.Remove(file); err != nil {
				return nil, "", fmt.Errorf("staging removal of %s: %w", file, err)
			}
		default:
			if s.Worktree == git.Untracked || s.Staging == git.Added {
				verb = "A"
			}
			if _, err := w.Add(file); err != nil {
				return nil, "", fmt.Errorf("staging %s: %w", file, err)
			}
		}
		changed = append(changed, rel)
		lines[rel] = verb + " " + rel
	}
	sort.Strings(changed)
	var b strings.Builder
	for _, c := range changed {
		b.WriteString(lines[c])
		b.WriteString("\n")
	}
	return changed, b.String(), nil
}
