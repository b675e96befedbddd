package gitrepo

import (
	"fmt"
	"sort"

	"github.com/go-git/go-git/v5/plumbing/filemode"
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
	sub, err := r.headTree(dir)
	if sub == nil || err != nil {
		return nil, err
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
