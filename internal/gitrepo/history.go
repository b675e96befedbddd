package gitrepo

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-git/go-git/v5/plumbing"
)

// Contains reports whether commit descendant includes commit ancestor: they
// are equal, or ancestor is in descendant's history. A descendant the
// clone has not seen yet is fetched once.
func (r *Repo) Contains(ctx context.Context, ancestor, descendant string) (bool, error) {
	if ancestor == "" || descendant == "" {
		return false, nil
	}
	if ancestor == descendant {
		return true, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	a, err := r.repo.CommitObject(plumbing.NewHash(ancestor))
	if err != nil {
		return false, fmt.Errorf("reading commit %s: %w", ancestor, err)
	}
	d, err := r.repo.CommitObject(plumbing.NewHash(descendant))
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		if err := r.fetch(ctx); err != nil {
			return false, err
		}
		d, err = r.repo.CommitObject(plumbing.NewHash(descendant))
	}
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading commit %s: %w", descendant, err)
	}
	return a.IsAncestor(d)
}
