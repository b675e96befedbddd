// Package gitrepo keeps a persistent local clone of one branch of a Git
// repository and commits rendered Kubernetes objects under a subtree Apiary
// owns, for Flux to apply. Every pushed tree is built with kustomize first;
// pushes are never forced.
package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"

	"github.com/apiaryhq/apiary/internal/crashpoint"
	"github.com/apiaryhq/apiary/internal/metrics"
)

const remoteName = "origin"

// Author is the identity written on Apiary's commits.
type Author struct {
	// Name of the commit author.
	Name string
	// Email of the commit author.
	Email string
}

// Options configures a Repo.
type Options struct {
	// URL of the remote repository.
	URL string
	// Branch to commit to; created on the first push when it does not exist.
	Branch string
	// Dir is the local clone folder, reused when it already holds a repository.
	Dir string
	// Path is the subtree Apiary owns, relative to the repository root (e.g. "apiary").
	Path string
	// Auth for fetch and push; nil for anonymous access.
	Auth transport.AuthMethod
	// Author of Apiary's commits.
	Author Author
	// MaxPushRetries bounds the retries after a non-fast-forward push (default 5).
	MaxPushRetries int
	// SigningKey, when set, signs every commit (OpenPGP).
	SigningKey *openpgp.Entity
	// Signer, when set, signs every commit in place of SigningKey (e.g.
	// with an SSH key).
	Signer git.Signer
	// Credentials, when set, are asked for the auth method before every
	// fetch and push and for the signer before every commit, in place of
	// Auth, SigningKey and Signer: rotated credentials apply at once.
	Credentials Credentials
}

// Result describes the outcome of a Sync.
type Result struct {
	// Committed is true when a commit was pushed.
	Committed bool
	// Commit is the SHA of the pushed commit, empty when nothing was committed.
	Commit string
	// Changed lists the changed files relative to Path, sorted.
	Changed []string
}

// Repo is a persistent clone of one branch. All methods are safe for
// concurrent use; operations are serialised.
type Repo struct {
	mu    sync.Mutex
	opts  Options
	repo  *git.Repository
	head  plumbing.Hash
	ready bool // head is valid (remote branch exists)
	// clean is true while the worktree and index hold exactly head, so the
	// next sync need not reset (which reads every file).
	clean bool

	// beforePush, when set (tests only), runs before every push attempt.
	beforePush func()
	// metrics counts commits, pushes and retries of the remote.
	metrics *metrics.GitRepository
	// recloned is why Open discarded the clone it found (Recloned).
	recloned error
}

// Open prepares the local clone in opts.Dir, initialising it when absent and
// fetching the branch. An existing clone is reused; it is cloned again only
// when it cannot be read (Recloned says why).
func Open(ctx context.Context, opts Options) (*Repo, error) {
	if opts.URL == "" || opts.Branch == "" || opts.Dir == "" {
		return nil, errors.New("gitrepo: URL, Branch and Dir are required")
	}
	p, err := cleanRel(opts.Path)
	if err != nil {
		return nil, fmt.Errorf("gitrepo: invalid Path %q: %w", opts.Path, err)
	}
	opts.Path = p
	if opts.MaxPushRetries <= 0 {
		opts.MaxPushRetries = 5
	}
	repo, err := open(ctx, opts)
	if err == nil || !unreadableClone(ctx, err) {
		return repo, err
	}
	// The clone is a cache of the remote branch. One that cannot be read
	// (a process killed while go-git wrote a ref, the index or a pack leaves
	// an empty or partial file) is discarded and cloned again, once.
	if rmErr := emptyDir(opts.Dir); rmErr != nil {
		return nil, fmt.Errorf("discarding clone %s, which cannot be read (%w): %w", opts.Dir, err, rmErr)
	}
	repo, again := open(ctx, opts)
	if again != nil {
		return nil, fmt.Errorf("cloning again into %s, whose clone could not be read (%w): %w", opts.Dir, err, again)
	}
	repo.recloned = err
	return repo, nil
}

// Recloned returns why Open discarded the clone it found and cloned the
// branch again; nil when it reused or made a clone without that.
func (r *Repo) Recloned() error { return r.recloned }

// unreadableClone reports whether an error of open is the local clone's:
// neither the remote's (unreachable, credentials refused or unusable) nor
// the end of ctx.
func unreadableClone(ctx context.Context, err error) bool {
	return ctx.Err() == nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) &&
		!IsUnreachable(err) && !IsAuthFailed(err) && !IsCredentials(err) && !IsSigningKey(err)
}

// emptyDir removes everything in dir, keeping dir itself (it may be a
// mounted volume).
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

// open opens or initialises the clone in opts.Dir and fetches the branch.
func open(ctx context.Context, opts Options) (*Repo, error) {
	r, err := git.PlainOpen(opts.Dir)
	if errors.Is(err, git.ErrRepositoryNotExists) {
		r, err = git.PlainInit(opts.Dir, false)
	}
	if err != nil {
		return nil, fmt.Errorf("opening clone %s: %w", opts.Dir, err)
	}
	if err := ensureRemote(r, opts.URL); err != nil {
		return nil, fmt.Errorf("configuring remote for clone %s: %w", opts.Dir, err)
	}
	head := plumbing.NewSymbolicReference(plumbing.HEAD, plumbing.NewBranchReferenceName(opts.Branch))
	if err := r.Storer.SetReference(head); err != nil {
		return nil, fmt.Errorf("setting HEAD of clone %s: %w", opts.Dir, err)
	}
	repo := &Repo{opts: opts, repo: r, metrics: metrics.Git(opts.URL)}
	if _, err := r.Reference(plumbing.NewRemoteReferenceName(remoteName, opts.Branch), true); err != nil {
		crashpoint.Reach(crashpoint.GitCloneFetch)
	}
	if err := repo.fetch(ctx); err != nil {
		return nil, err
	}
	if err := repo.resetToRemote(); err != nil {
		return nil, err
	}
	return repo, nil
}

func ensureRemote(r *git.Repository, url string) error {
	rem, err := r.Remote(remoteName)
	if err == nil {
		if urls := rem.Config().URLs; len(urls) == 1 && urls[0] == url {
			return nil
		}
		if err := r.DeleteRemote(remoteName); err != nil {
			return err
		}
	} else if !errors.Is(err, git.ErrRemoteNotFound) {
		return err
	}
	_, err = r.CreateRemote(&config.RemoteConfig{Name: remoteName, URLs: []string{url}})
	return err
}

// Head returns the SHA the local branch points to, empty before the branch exists.
func (r *Repo) Head() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.ready {
		return ""
	}
	return r.head.String()
}

// Files returns the files under Path at HEAD, keyed by path relative to Path.
func (r *Repo) Files() (map[string][]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]byte{}
	sub, err := r.headTree(r.opts.Path)
	if sub == nil || err != nil {
		return out, err
	}
	err = sub.Files().ForEach(func(f *object.File) error {
		s, err := f.Contents()
		if err != nil {
			return err
		}
		out[f.Name] = []byte(s)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading files under %s: %w", r.opts.Path, err)
	}
	return out, nil
}

// headTree returns the tree of dir (relative to the repository root) at
// HEAD; nil before the branch exists or when dir does not. Callers hold
// r.mu.
func (r *Repo) headTree(dir string) (*object.Tree, error) {
	if !r.ready {
		return nil, nil
	}
	c, err := r.repo.CommitObject(r.head)
	if err != nil {
		return nil, fmt.Errorf("reading commit %s: %w", r.head, err)
	}
	tree, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("reading tree of %s: %w", r.head, err)
	}
	sub, err := tree.Tree(dir)
	if errors.Is(err, object.ErrDirectoryNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s at %s: %w", dir, r.head, err)
	}
	return sub, nil
}

// fetch updates the remote-tracking ref of the branch; a missing branch or
// an empty remote leaves r.ready false.
func (r *Repo) fetch(ctx context.Context) error {
	branch := plumbing.NewBranchReferenceName(r.opts.Branch)
	tracking := plumbing.NewRemoteReferenceName(remoteName, r.opts.Branch)
	auth, err := r.auth(ctx)
	if err != nil {
		return fmt.Errorf("fetching %s branch %s: %w", redactURL(r.opts.URL), r.opts.Branch, err)
	}
	err = r.repo.FetchContext(ctx, &git.FetchOptions{
		RemoteName: remoteName,
		RefSpecs:   []config.RefSpec{config.RefSpec(fmt.Sprintf("+%s:%s", branch, tracking))},
		Auth:       auth,
		Tags:       git.NoTags,
		Force:      true,
	})
	var noMatch git.NoMatchingRefSpecError
	switch {
	case err == nil, errors.Is(err, git.NoErrAlreadyUpToDate):
	case errors.Is(err, transport.ErrEmptyRemoteRepository), errors.As(err, &noMatch):
		r.ready = false
		_ = r.repo.Storer.RemoveReference(tracking)
		return nil
	default:
		return fmt.Errorf("fetching %s branch %s: %w", redactURL(r.opts.URL), r.opts.Branch, classify(err))
	}
	ref, err := r.repo.Reference(tracking, true)
	if err != nil {
		return fmt.Errorf("resolving %s: %w", tracking, err)
	}
	r.head, r.ready = ref.Hash(), true
	return nil
}

// resetToRemote makes the worktree, index and local branch equal to the
// fetched remote head (or empty when the branch does not exist yet), dropping
// local commits and untracked files.
func (r *Repo) resetToRemote() error {
	w, err := r.repo.Worktree()
	if err != nil {
		return fmt.Errorf("opening worktree %s: %w", r.opts.Dir, err)
	}
	branch := plumbing.NewBranchReferenceName(r.opts.Branch)
	if !r.ready {
		if err := r.repo.Storer.RemoveReference(branch); err != nil {
			return fmt.Errorf("removing local branch %s: %w", r.opts.Branch, err)
		}
		if err := r.repo.Storer.SetIndex(&index.Index{Version: 2}); err != nil {
			return fmt.Errorf("clearing index of %s: %w", r.opts.Dir, err)
		}
		return clearDir(r.opts.Dir)
	}
	if local, err := r.repo.Reference(branch, true); err == nil && local.Hash() == r.head && r.clean {
		return nil // nothing moved and nothing was left behind
	}
	if err := r.repo.Storer.SetReference(plumbing.NewHashReference(branch, r.head)); err != nil {
		return fmt.Errorf("moving branch %s to %s: %w", r.opts.Branch, r.head, err)
	}
	if err := w.Reset(&git.ResetOptions{Commit: r.head, Mode: git.HardReset}); err != nil {
		return fmt.Errorf("resetting %s to %s: %w", r.opts.Dir, r.head, err)
	}
	if err := w.Clean(&git.CleanOptions{Dir: true}); err != nil {
		return fmt.Errorf("cleaning %s: %w", r.opts.Dir, err)
	}
	r.clean = true
	return nil
}

// clearDir removes everything in dir except .git.
func clearDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("listing %s: %w", dir, err)
	}
	for _, e := range entries {
		if e.Name() == git.GitDirName {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("removing %s: %w", e.Name(), err)
		}
	}
	return nil
}

// cleanRel validates a slash-separated relative path inside the repository.
func cleanRel(p string) (string, error) {
	if p == "" {
		return "", errors.New("empty path")
	}
	if strings.HasPrefix(p, "/") || strings.Contains(p, "\\") {
		return "", errors.New("must be a relative slash-separated path")
	}
	c := filepath.ToSlash(filepath.Clean(p))
	if c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return "", errors.New("must stay inside its root")
	}
	for _, part := range strings.Split(c, "/") {
		if part == git.GitDirName {
			return "", errors.New("must not name .git")
		}
	}
	return c, nil
}

// backoff waits before retry attempt n (1-based) with jitter.
func backoff(ctx context.Context, n int) error {
	base := 100 * time.Millisecond << min(n-1, 5)
	d := base/2 + rand.N(base)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
