package metrics

import (
	"net/url"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Results of a push attempt (the result label of apiary_git_pushes_total).
const (
	// PushSucceeded: the commit is on the remote branch.
	PushSucceeded = "success"
	// PushNonFastForward: the remote branch moved meanwhile; the commit is
	// made again on the new head and retried.
	PushNonFastForward = "non_fast_forward"
	// PushRejected: the server refused the push (a protected branch, or a
	// branch that kept moving through every retry).
	PushRejected = "rejected"
	// PushUnreachable: the Git server could not be reached (fetch or push).
	PushUnreachable = "unreachable"
	// PushAuthFailed: the Git server refused the credentials.
	PushAuthFailed = "auth_failed"
	// PushInvalidTree: kustomize could not build the tree; nothing was pushed.
	PushInvalidTree = "invalid_tree"
	// PushError: any other failure.
	PushError = "error"
)

// PushResults are every value of the result label.
var PushResults = []string{PushSucceeded, PushNonFastForward, PushRejected, PushUnreachable, PushAuthFailed, PushInvalidTree, PushError}

// SyncLatencyBuckets are the buckets of the commit-to-sync latency, 1 s to 30 min.
var SyncLatencyBuckets = prometheus.ExponentialBucketsRange(1, 1800, 10)

var (
	gitCommits = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "git_commits_total",
		Help: "Commits Apiary made in its clone of a repository, including those made again after the remote branch moved.",
	}, []string{"repository"})
	gitPushes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "git_pushes_total",
		Help: "Attempts to push a batch of changes to a repository, by result; an attempt that failed before its push (fetching, building the tree) counts with its cause.",
	}, []string{"repository", "result"})
	gitPushRetries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: Namespace, Name: "git_push_retries_total",
		Help: "Pushes retried on the new head after the remote branch moved.",
	}, []string{"repository"})
	gitSyncLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: Namespace, Name: "git_sync_latency_seconds",
		Help:    "Time from a commit's push to the Flux Kustomization reporting it (or a later commit) applied, as Apiary reads it back.",
		Buckets: SyncLatencyBuckets,
	}, []string{"repository"})

	gitReposMu sync.Mutex
	gitRepos   = map[string]*GitRepository{}
)

// RepositoryLabel is the repository label of a remote URL: the URL without
// credentials or query.
func RepositoryLabel(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "unparsable"
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// GitRepository records the Git delivery metrics of one repository; every
// clone of the same remote shares it. Its series exist, at zero, from the
// first clone on.
type GitRepository struct {
	commits, retries prometheus.Counter
	pushes           map[string]prometheus.Counter
	latency          prometheus.Observer
}

// Git returns the recorder of the repository at a remote URL.
func Git(remote string) *GitRepository {
	label := RepositoryLabel(remote)
	gitReposMu.Lock()
	defer gitReposMu.Unlock()
	if r, ok := gitRepos[label]; ok {
		return r
	}
	r := &GitRepository{
		commits: gitCommits.WithLabelValues(label),
		retries: gitPushRetries.WithLabelValues(label),
		pushes:  make(map[string]prometheus.Counter, len(PushResults)),
		latency: gitSyncLatency.WithLabelValues(label),
	}
	for _, res := range PushResults {
		r.pushes[res] = gitPushes.WithLabelValues(label, res)
	}
	gitRepos[label] = r
	return r
}

// Committed counts a commit made in the clone.
func (r *GitRepository) Committed() { r.commits.Inc() }

// Pushed counts a push attempt with its result, one of PushResults.
func (r *GitRepository) Pushed(result string) {
	c, ok := r.pushes[result]
	if !ok {
		c = r.pushes[PushError]
	}
	c.Inc()
}

// Retried counts a push retried after the remote branch moved.
func (r *GitRepository) Retried() { r.retries.Inc() }

// maxPendingCommits bounds the pushed commits a SyncTracker waits for; the
// oldest are dropped (and never observed) beyond it.
const maxPendingCommits = 256

// SyncTracker measures, for one Git sink, the time from each pushed commit
// to the Flux Kustomization that applies the sink's path reporting that
// commit, or a later one that contains it, applied.
type SyncTracker struct {
	repo    *GitRepository
	mu      sync.Mutex
	pending []pushedCommit
	applied string // the last applied revision handled
}

type pushedCommit struct {
	sha string
	at  time.Time
}

// NewSyncTracker returns a tracker whose observations go to the repository at remote.
func NewSyncTracker(remote string) *SyncTracker { return &SyncTracker{repo: Git(remote)} }

// Pushed records a commit pushed at a time.
func (t *SyncTracker) Pushed(sha string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.pending) == maxPendingCommits {
		t.pending = t.pending[1:]
	}
	t.pending = append(t.pending, pushedCommit{sha: sha, at: at})
}

// Applied handles a revision the Kustomization reports applied: every
// pending commit that contains(sha) says the applied revision holds is
// observed and forgotten. A revision already handled costs nothing;
// contains errors leave the commit pending.
func (t *SyncTracker) Applied(applied string, contains func(sha string) (bool, error)) {
	t.mu.Lock()
	if applied == "" || applied == t.applied || len(t.pending) == 0 {
		t.mu.Unlock()
		return
	}
	pending := append([]pushedCommit(nil), t.pending...)
	t.mu.Unlock()

	now := time.Now()
	done := map[string]bool{}
	complete := true
	for _, c := range pending {
		ok, err := contains(c.sha)
		if err != nil {
			complete = false
		}
		if ok {
			done[c.sha] = true
			t.repo.latency.Observe(now.Sub(c.at).Seconds())
		}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	kept := t.pending[:0]
	for _, c := range t.pending {
		if !done[c.sha] {
			kept = append(kept, c)
		}
	}
	t.pending = kept
	if complete {
		t.applied = applied
	}
}
