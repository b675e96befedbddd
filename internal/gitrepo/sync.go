package gitrepo

import (
	"bytes"
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

	"github.com/apiaryhq/apiary/internal/crashpoint"
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
	return r.retryPush(ctx, func() (Result, error) { return r.syncOnce(ctx, changes, deletes, message) })
}

// retryPush runs once, and again after a non-fast-forward push, up to
// MaxPushRetries times with backoff.
func (r *Repo) retryPush(ctx context.Context, once func() (Result, error)) (Result, error) {
	var lastErr error
	for attempt := 0; attempt <= r.opts.MaxPushRetries; attempt++ {
		if attempt > 0 {
			r.metrics.Retried()
			if err := backoff(ctx, attempt); err != nil {
				return Result{}, fmt.Errorf("retrying push to %s: %w", r.opts.Branch, err)
			}
		}
		res, err := once()
		r.observe(res, err)
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
	touched, err := apply(root, changes, deletes)
	if len(touched) > 0 {
		r.clean = false
	}
	if err != nil {
		return Result{}, err
	}
	kustomizations, err := writeKustomizations(root)
	if len(kustomizations) > 0 {
		r.clean = false
	}
	if err != nil {
		return Result{}, err
	}
	if len(touched) == 0 && len(kustomizations) == 0 {
		return Result{}, nil // the head already holds exactly this
	}
	if err := build(root, append(touched, kustomizations...)); err != nil {
		return Result{}, err
	}
	changed, summary, err := r.stage(append(touched, kustomizations...))
	if err != nil {
		return Result{}, err
	}
	return r.commitAndPush(ctx, changed, summary, message)
}

// commitAndPush commits the staged index, signed when a signer is set, and
// pushes it; the summary lists the changed files in the message.
func (r *Repo) commitAndPush(ctx context.Context, changed []string, summary, message string) (Result, error) {
	msg := strings.TrimRight(message, "\n") + "\n\n" + summary
	w, err := r.repo.Worktree()
	if err != nil {
		return Result{}, fmt.Errorf("opening worktree %s: %w", r.opts.Dir, err)
	}
	opts := &git.CommitOptions{Author: &object.Signature{
		Name: r.opts.Author.Name, Email: r.opts.Author.Email, When: time.Now(),
	}}
	if err := r.sign(ctx, opts); err != nil {
		return Result{}, fmt.Errorf("committing to %s: %w", r.opts.Branch, err)
	}
	crashpoint.Reach(crashpoint.GitCommit)
	hash, err := w.Commit(msg, opts)
	if errors.Is(err, git.ErrEmptyCommit) {
		return Result{}, nil
	}
	if err != nil {
		if opts.Signer != nil {
			err = wrapOnce(ErrSigningKey, err)
		}
		return Result{}, fmt.Errorf("committing to %s: %w", r.opts.Branch, err)
	}
	r.metrics.Committed()
	if r.beforePush != nil {
		r.beforePush()
	}
	crashpoint.Reach(crashpoint.GitPush)
	if err := r.push(ctx); err != nil {
		return Result{}, err
	}
	crashpoint.Reach(crashpoint.GitPushed)
	r.head, r.ready, r.clean = hash, true, true
	// Keep the tracking ref equal to what the remote now holds.
	_ = r.repo.Storer.SetReference(plumbing.NewHashReference(
		plumbing.NewRemoteReferenceName(remoteName, r.opts.Branch), hash))
	return Result{Committed: true, Commit: hash.String(), Changed: changed}, nil
}

func (r *Repo) push(ctx context.Context) error {
	ref := plumbing.NewBranchReferenceName(r.opts.Branch)
	auth, err := r.auth(ctx)
	if err != nil {
		return fmt.Errorf("pushing to %s branch %s: %w", redactURL(r.opts.URL), r.opts.Branch, err)
	}
	err = r.repo.PushContext(ctx, &git.PushOptions{
		RemoteName: remoteName,
		RefSpecs:   []config.RefSpec{config.RefSpec(fmt.Sprintf("%s:%s", ref, ref))},
		Auth:       auth,
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

// apply writes changes and removes deletes under root, and returns the
// paths (relative to root) whose content it changed.
func apply(root string, changes map[string][]byte, deletes []string) ([]string, error) {
	var touched []string
	for _, p := range deletes {
		if _, ok := changes[p]; ok {
			continue
		}
		err := os.Remove(filepath.Join(root, filepath.FromSlash(p)))
		switch {
		case err == nil:
			touched = append(touched, p)
		case !os.IsNotExist(err):
			return touched, fmt.Errorf("deleting %s: %w", p, err)
		}
	}
	for _, p := range sortedKeys(changes) {
		full := filepath.Join(root, filepath.FromSlash(p))
		if old, err := os.ReadFile(full); err == nil && bytes.Equal(old, changes[p]) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return touched, fmt.Errorf("creating directory for %s: %w", p, err)
		}
		if err := os.WriteFile(full, changes[p], 0o644); err != nil {
			return touched, fmt.Errorf("writing %s: %w", p, err)
		}
		touched = append(touched, p)
	}
	return touched, nil
}

func isYAML(name string) bool {
	return (strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")) && name != kustomizationFile
}

// writeKustomizations regenerates kustomization.yaml in every directory under
// root that holds YAML (directly or below), removes it (and empty
// directories) elsewhere, and always writes one at root. It returns the
// kustomization.yaml paths (relative to root) it changed or removed.
func writeKustomizations(root string) ([]string, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("creating %s: %w", root, err)
	}
	var changed []string
	_, err := writeKustomization(root, "", &changed)
	return changed, err
}

// writeKustomization handles one directory (rel to the root, "" for the root)
// and reports whether it holds YAML.
func writeKustomization(dir, rel string, changed *[]string) (bool, error) {
	isRoot := rel == ""
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false, fmt.Errorf("listing %s: %w", dir, err)
	}
	var resources []string
	for _, e := range entries {
		switch {
		case e.IsDir():
			has, err := writeKustomization(filepath.Join(dir, e.Name()), path.Join(rel, e.Name()), changed)
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
	krel := path.Join(rel, kustomizationFile)
	if len(resources) == 0 && !isRoot {
		err := os.Remove(kfile)
		switch {
		case err == nil:
			*changed = append(*changed, krel)
		case !os.IsNotExist(err):
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
	if old, err := os.ReadFile(kfile); err == nil && bytes.Equal(old, data) {
		return true, nil
	}
	if err := os.WriteFile(kfile, data, 0o644); err != nil {
		return false, fmt.Errorf("writing %s: %w", kfile, err)
	}
	*changed = append(*changed, krel)
	return true, nil
}

// build runs kustomize, as Flux would, on every file under root that a
// commit changes (touched, relative to root), each on its own. That is the
// same as building the whole tree, at a small fraction of the cost on large
// trees (kustomize's build time grows faster than the number of
// resources): the generated kustomization.yaml files only list the files
// and subdirectories next to them, and the layout
// <namespace>/<kind>/<name>.yaml gives every object a path of its own, so
// two files cannot hold one object and a tree fails to build only where a
// file does. Changed kustomization.yaml files are read to check they parse.
func build(root string, touched []string) error {
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	for _, rel := range touched {
		full := filepath.Join(root, filepath.FromSlash(rel))
		if path.Base(rel) == kustomizationFile {
			if err := checkKustomization(full); err != nil {
				return err
			}
			continue
		}
		data, err := os.ReadFile(full)
		if os.IsNotExist(err) {
			continue // removed
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", rel, err)
		}
		fs := filesys.MakeFsInMemory()
		if err := fs.WriteFile("/object.yaml", data); err != nil {
			return fmt.Errorf("building %s: %w", rel, err)
		}
		if err := fs.WriteFile("/"+kustomizationFile, []byte("resources:\n- object.yaml\n")); err != nil {
			return fmt.Errorf("building %s: %w", rel, err)
		}
		if _, err := k.Run(fs, "/"); err != nil {
			return fmt.Errorf("%w: building %s: %w", ErrInvalidTree, rel, err)
		}
	}
	return nil
}

// checkKustomization reads a generated kustomization.yaml, if it exists.
func checkKustomization(file string) error {
	data, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s: %w", file, err)
	}
	var k types.Kustomization
	if err := yaml.UnmarshalStrict(data, &k); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrInvalidTree, filepath.Base(filepath.Dir(file)), err)
	}
	return nil
}
