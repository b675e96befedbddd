package gitrepo

import (
	"errors"
	"fmt"
	"sort"

	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Folders returns the names of the folders directly in dir (relative to the
// repository root, anywhere in the tree, not only under Path) at the head
// the clone last fetched, sorted; none when dir does not exist.
func (r *Repo) Folders(dir string) ([]string, error) {
	dir, err := cleanRel(dir)
	if err != nil {
		return nil, fmt.Errorf("gitrepo: invalid folder %q: %w", dir, err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
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
	var out []string
	for _, e := range sub.Entries {
		if e.Mode == filemode.Dir {
			out = append(out, e.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}
