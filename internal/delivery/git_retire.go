package delivery

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/apiaryhq/apiary/internal/naming"
)

// Opened is closed once the sink's clone is open.
func (g *Git) Opened() <-chan struct{} { return g.opened }

// Folders returns the folders directly in dir, a folder of the repository
// anywhere in its tree, at the head the clone last fetched: e.g. the
// folders other sinks write next to this one.
func (g *Git) Folders(dir string) ([]string, error) {
	g.mu.Lock()
	repo := g.repo
	g.mu.Unlock()
	if repo == nil {
		return nil, ErrNotOpen
	}
	return repo.Folders(dir)
}

// Owners returns the owners of kind that have files in the sink's path,
// queued changes included, sorted.
func (g *Git) Owners(kind string) []Owner {
	g.mu.Lock()
	defer g.mu.Unlock()
	seen := map[ownerKey]bool{}
	var out []Owner
	for _, data := range g.files() {
		if o, ok := fileOwner(data); ok && o.Kind == naming.LabelValue(kind) && !seen[keyOf(o)] {
			seen[keyOf(o)] = true
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// files returns every file of the path after the queued changes. Callers
// hold g.mu.
func (g *Git) files() map[string][]byte {
	files := make(map[string][]byte, len(g.head)+len(g.pending))
	for path, data := range g.head {
		files[path] = data
	}
	for path, p := range g.pending {
		if p.data == nil {
			delete(files, path)
		} else {
			files[path] = p.data
		}
	}
	return files
}

// RemoveOwner queues the removal of every file of owner, found by the owner
// labels in the files rather than by an inventory (which a restart may
// have lost). Like Apply, the Result is Pending while the removal waits for
// its commit (with the error of a failed one); then its Revision is the
// commit without the files.
func (g *Git) RemoveOwner(owner Owner) (*Result, error) {
	if err := owner.Validate(); err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.retired {
		return nil, ErrRetired
	}
	if g.repo == nil {
		return &Result{Pending: true}, fmt.Errorf("%w: %w", ErrNotOpen, g.openErr)
	}
	key := keyOf(owner)
	var changed []string
	for path, data := range g.files() {
		if ownedBy(owner, data) {
			g.queue(path, nil, key, fileUnit(data))
			changed = append(changed, path)
		}
	}
	sort.Strings(changed)
	res := &Result{Changed: changed}
	if g.perOwner[key] > 0 {
		res.Pending = true
		g.wake()
		return res, g.ownerErr[key]
	}
	res.Revision = g.revisionOf(key)
	return res, nil
}

// Retire removes the sink's whole path, its kustomization.yaml files
// included, in one commit made now, and drops the changes queued for it:
// for the folder of a target that is gone. From then on the sink refuses
// Apply and Delete; stop it. A failed Retire can be called again.
func (g *Git) Retire(ctx context.Context) (string, error) {
	g.committing.Lock()
	defer g.committing.Unlock()
	g.mu.Lock()
	repo := g.repo
	if repo == nil {
		err := g.openErr
		g.mu.Unlock()
		return "", fmt.Errorf("%w: %w", ErrNotOpen, err)
	}
	g.retired = true
	owners := map[ownerKey]bool{}
	for _, p := range g.pending {
		owners[p.owner] = true
	}
	g.pending, g.perOwner = map[string]*pendingFile{}, map[ownerKey]int{}
	g.mu.Unlock()

	msg := g.opts.Message + "\n\nRemoved " + g.opts.Repo.Path + ": its target is gone"
	res, err := repo.RemoveTree(ctx, strings.TrimSpace(msg))
	if err != nil {
		return "", fmt.Errorf("removing %s: %w", g.opts.Repo.Path, err)
	}
	rev := res.Commit
	if rev == "" {
		rev = repo.Head()
	}
	g.mu.Lock()
	g.head, g.headSHA = map[string][]byte{}, rev
	g.mu.Unlock()
	if res.Committed {
		g.opts.Logger.Info("removed the folder of a target that is gone", "path", g.opts.Repo.Path, "commit", rev, "files", len(res.Changed))
		g.nudgeFlux(ctx)
	}
	g.notices.Notify(owners)
	return rev, nil
}
