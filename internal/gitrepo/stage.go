package gitrepo

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// stage records the files under Path that apply and writeKustomizations
// changed (rels, relative to Path) in the index, without walking the
// worktree, and returns them sorted with a one-line-per-file summary for the
// message: A(dded), M(odified) or D(eleted) against the head.
func (r *Repo) stage(rels []string) ([]string, string, error) {
	var headTree *object.Tree
	if r.ready {
		c, err := r.repo.CommitObject(r.head)
		if err != nil {
			return nil, "", fmt.Errorf("reading commit %s: %w", r.head, err)
		}
		if headTree, err = c.Tree(); err != nil {
			return nil, "", fmt.Errorf("reading tree of %s: %w", r.head, err)
		}
	}
	idx, err := r.repo.Storer.Index()
	if err != nil {
		return nil, "", fmt.Errorf("reading index of %s: %w", r.opts.Dir, err)
	}
	sort.Strings(rels)
	var changed []string
	var b strings.Builder
	for _, rel := range rels {
		file := path.Join(r.opts.Path, rel)
		_, statErr := os.Stat(filepath.Join(r.opts.Dir, filepath.FromSlash(file)))
		inHead := false
		if headTree != nil {
			_, err := headTree.FindEntry(file)
			inHead = err == nil
		}
		verb := "M"
		switch {
		case os.IsNotExist(statErr):
			if _, err := idx.Remove(file); err != nil && !errors.Is(err, index.ErrEntryNotFound) {
				return nil, "", fmt.Errorf("staging removal of %s: %w", file, err)
			}
			if !inHead {
				continue
			}
			verb = "D"
		case statErr != nil:
			return nil, "", fmt.Errorf("reading %s: %w", file, statErr)
		default:
			if !inHead {
				verb = "A"
			}
		}
		changed = append(changed, rel)
		fmt.Fprintf(&b, "%s %s\n", verb, rel)
	}
	for _, rel := range changed {
		file := path.Join(r.opts.Path, rel)
		if err := r.stageFile(idx, file); err != nil {
			return nil, "", err
		}
	}
	// One index write for the whole change, however many files it has.
	if err := r.repo.Storer.SetIndex(idx); err != nil {
		return nil, "", fmt.Errorf("writing index of %s: %w", r.opts.Dir, err)
	}
	return changed, b.String(), nil
}

// stageFile stores a file of the worktree as a blob and points its index
// entry at it; a file that no longer exists is left out (already removed).
func (r *Repo) stageFile(idx *index.Index, file string) error {
	full := filepath.Join(r.opts.Dir, filepath.FromSlash(file))
	info, err := os.Stat(full)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("staging %s: %w", file, err)
	}
	data, err := os.ReadFile(full)
	if err != nil {
		return fmt.Errorf("staging %s: %w", file, err)
	}
	obj := r.repo.Storer.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	obj.SetSize(int64(len(data)))
	ow, err := obj.Writer()
	if err != nil {
		return fmt.Errorf("staging %s: %w", file, err)
	}
	if _, err := ow.Write(data); err != nil {
		return fmt.Errorf("staging %s: %w", file, err)
	}
	if err := ow.Close(); err != nil {
		return fmt.Errorf("staging %s: %w", file, err)
	}
	hash, err := r.repo.Storer.SetEncodedObject(obj)
	if err != nil {
		return fmt.Errorf("staging %s: %w", file, err)
	}
	e, err := idx.Entry(file)
	if err != nil {
		e = idx.Add(file)
	}
	e.Hash, e.Mode, e.Size = hash, filemode.Regular, uint32(len(data))
	e.ModifiedAt = info.ModTime()
	return nil
}
