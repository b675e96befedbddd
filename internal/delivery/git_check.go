package delivery

import (
	"bytes"
	"context"
	"time"

	"github.com/apiaryhq/apiary/internal/delivery/check"
)

// Bounds of the memo of refused files: the same content is not checked
// again within refusalTTL, so an owner that keeps failing costs no request
// per reconcile.
const (
	refusalTTL  = 10 * time.Minute
	maxRefusals = 4096
)

// content is what a file would commit in plaintext.
func content(f *gitFile) []byte {
	if f.secret != nil {
		return f.secret
	}
	return f.data
}

// lockChecked checks owner's changed files and returns with g.mu held,
// and the errors of the files that may not be queued, by path. The checks
// run outside the lock: a check may be an API request. Unchanged files
// cost nothing. A clone that opened meanwhile is checked against anew.
func (g *Git) lockChecked(ctx context.Context, owner Owner, files []*gitFile) map[string]error {
	for {
		now := time.Now()
		g.mu.Lock()
		open := g.repo != nil && !g.retired
		toCheck, refused := g.changedFiles(owner, files, now)
		g.mu.Unlock()
		errs := g.checkFiles(ctx, toCheck)
		g.mu.Lock()
		g.remember(toCheck, errs, now)
		for path, err := range errs {
			refused[path] = err
		}
		if open || g.repo == nil || g.retired {
			return refused
		}
		g.mu.Unlock()
	}
}

// changedFiles returns the files of owner whose content differs from what
// the sink holds or has queued for their path, and the refusals it
// remembers for the others' content; those are checked before they are
// queued. Nothing is returned while the sink is not open, which Apply
// reports. Callers hold g.mu.
func (g *Git) changedFiles(owner Owner, files []*gitFile, now time.Time) (toCheck []*gitFile, refused map[string]error) {
	refused = map[string]error{}
	if g.repo == nil || g.retired {
		return nil, refused
	}
	for _, f := range files {
		cur := g.current(f.path)
		if fileOwnerOther(owner, cur) != "" {
			continue // refused below, at no cost
		}
		if f.secret != nil {
			if g.opts.Encrypter == nil {
				continue // refused below, at no cost
			}
			if cur != nil && g.opts.Encrypter.Unchanged(cur, f.secret) {
				f.holds = cur
				continue
			}
		} else if bytes.Equal(cur, f.data) {
			continue
		}
		if err := g.refusals.Refused(f.path, content(f), now); err != nil {
			refused[f.path] = err
			continue
		}
		toCheck = append(toCheck, f)
	}
	return toCheck, refused
}

// checkFiles validates files: their size, then the Validator's dry run.
// It returns the errors of the files that may not be queued, by path.
func (g *Git) checkFiles(ctx context.Context, files []*gitFile) map[string]error {
	out := map[string]error{}
	for _, f := range files {
		err := check.Size(f.obj)
		if v := g.opts.Validator; err == nil && v != nil {
			err = v.Validate(ctx, f.obj)
		}
		if err != nil {
			out[f.path] = err
		}
	}
	return out
}

// remember records the outcome of checks of files in the memo of
// refusals. Callers hold g.mu.
func (g *Git) remember(checked []*gitFile, errs map[string]error, now time.Time) {
	for _, f := range checked {
		g.refusals.Record(f.path, content(f), errs[f.path], now)
	}
}
