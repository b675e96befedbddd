package gitrepo

import (
	"context"
	"errors"

	"github.com/apiaryhq/apiary/internal/metrics"
)

// observe counts one attempt of Sync by its outcome: a pushed commit, or the
// failure that ended it. An attempt with nothing to commit is no push, and
// one cut short by shutdown is not counted.
func (r *Repo) observe(res Result, err error) {
	if err == nil {
		if res.Committed {
			r.metrics.Pushed(metrics.PushSucceeded)
		}
		return
	}
	if errors.Is(err, context.Canceled) {
		return
	}
	r.metrics.Pushed(pushResult(err))
}

// pushResult is the result label of a failed attempt.
func pushResult(err error) string {
	switch {
	case errors.Is(err, errNonFastForward):
		return metrics.PushNonFastForward
	case IsAuthFailed(err):
		return metrics.PushAuthFailed
	case IsUnreachable(err):
		return metrics.PushUnreachable
	case IsPushRejected(err):
		return metrics.PushRejected
	case errors.Is(err, ErrInvalidTree):
		return metrics.PushInvalidTree
	}
	return metrics.PushError
}
