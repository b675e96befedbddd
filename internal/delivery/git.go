package delivery

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	"github.com/apiaryhq/apiary/internal/delivery/canon"
	"github.com/apiaryhq/apiary/internal/delivery/check"
	"github.com/apiaryhq/apiary/internal/delivery/seal"
	"github.com/apiaryhq/apiary/internal/gitrepo"
	"github.com/apiaryhq/apiary/internal/metrics"
	"github.com/apiaryhq/apiary/internal/notice"
)

// DefaultCommitWindow is how long the Git sink collects changes before it
// commits them together.
const DefaultCommitWindow = 2 * time.Second

// ErrNotOpen marks an Apply or Delete that came before the Git sink could
// open its clone; the wrapped error says why (unreachable, auth, ...).
var ErrNotOpen = errors.New("the Git repository is not open yet")

// ErrRetired marks an Apply or Delete on a sink whose folder was removed
// (Retire).
var ErrRetired = errors.New("the Git folder was removed: its target is gone")

// GitOptions configure the Git sink.
type GitOptions struct {
	// Repo configures the persistent clone; Repo.Path is the subtree the
	// sink owns.
	Repo gitrepo.Options
	// Mapper tells namespaced kinds from cluster-scoped ones.
	Mapper meta.RESTMapper
	// Reader reads the cluster Flux applies to, to confirm that deleted
	// objects were pruned; the manager's cached client.
	Reader client.Reader
	// Scheme decides which kinds Reader reads as typed objects.
	Scheme *runtime.Scheme
	// Encrypter seals Secrets; nil refuses every Secret (seal.ErrNoRecipients).
	Encrypter seal.Encrypter
	// Validator checks each object whose content changed before it is
	// queued, e.g. a DryRun on the cluster Flux applies the folder to; an
	// object it refuses fails its owner only. nil checks sizes only.
	Validator check.Validator
	// Window is how long changes are collected into one commit
	// (DefaultCommitWindow when zero).
	Window time.Duration
	// Message is the first line of every commit message.
	Message string
	// Flux names the Flux objects that apply Repo.Path, for Synced and
	// for asking Flux to fetch at once after a push. Optional.
	Flux FluxTarget
	// Logger for the commit loop.
	Logger logr.Logger
	// MayRemove, with sharding, says whether this process may sweep a
	// file whose shard unit (AnnotationShardUnit) is unit: only when it
	// holds the unit (internal/shard MayRemove). nil sweeps every file.
	MayRemove func(unit string) bool
}

// FluxTarget names the Flux GitRepository and Kustomization that apply the
// sink's path.
type FluxTarget struct {
	// GitRepository is nudged (reconcile.fluxcd.io/requestedAt) after a push.
	GitRepository *types.NamespacedName
	// Kustomization's lastAppliedRevision tells whether a commit is applied.
	Kustomization *types.NamespacedName
	// Client patches the nudge annotation; nil disables nudging.
	Client client.Client
}

// ownerKey identifies an owner in the sink's bookkeeping.
type ownerKey = notice.Key

func keyOf(o Owner) ownerKey { return ownerKey{Kind: o.Kind, Namespace: o.Namespace, Name: o.Name} }

// pendingFile is a change waiting for the next commit: new content, or a
// removal when data is nil.
type pendingFile struct {
	data  []byte
	owner ownerKey
	// unit is the shard unit of the change (WithUnit, or the removed
	// file's AnnotationShardUnit); "" when unknown.
	unit string
}

// Git is the sink that commits objects to a Git repository for Flux to apply.
// Apply never waits for Git: it queues the changed files and returns a
// pending Result; a commit loop (Start) commits the changes of a window in
// one commit and then notifies the owners (Subscribe) to reconcile again.
// Unchanged output queues nothing and costs no Git or API request.
type Git struct {
	opts  GitOptions
	kick  chan struct{}
	retry chan struct{} // cuts short the wait after a failure
	// opened is closed once the clone is open.
	opened chan struct{}
	// committing is held while a commit is made, so that Retire never
	// runs beside one.
	committing sync.Mutex

	mu       sync.Mutex
	repo     *gitrepo.Repo
	openErr  error
	head     map[string][]byte // files under the path at the last known head
	headSHA  string
	pending  map[string]*pendingFile
	perOwner map[ownerKey]int // pending files per owner
	ownerRev map[ownerKey]string
	ownerErr map[ownerKey]error
	refused  map[ownerKey]bool // owners turned away before the clone opened
	refusals *check.Memo       // files whose content a check refused
	sweeps   []sweepRequest    // sweeps asked for before the clone opened
	retired  bool              // the path was removed (Retire)
	// loadedAt is when the fetch of the files in head began (open or
	// Refresh); wantFresh the latest time a Refresh asked for before the
	// clone was open.
	loadedAt, wantFresh time.Time
	notices             notice.Board
	// syncs times each pushed commit until Flux applied it.
	syncs *metrics.SyncTracker
}

var _ Sink = (*Git)(nil)

// NewGit returns a Git sink. Add it to the manager (it is a Runnable): Start
// opens the clone and runs the commit loop.
func NewGit(opts GitOptions) (*Git, error) {
	if opts.Mapper == nil || opts.Reader == nil {
		return nil, errors.New("git sink needs a REST mapper and a reader")
	}
	opts.Mapper = remembering(opts.Mapper)
	if opts.Window <= 0 {
		opts.Window = DefaultCommitWindow
	}
	if opts.Message == "" {
		opts.Message = "apiary: update rendered objects"
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = logr.Discard()
	}
	return &Git{
		opts:     opts,
		kick:     make(chan struct{}, 1),
		retry:    make(chan struct{}, 1),
		opened:   make(chan struct{}),
		openErr:  errors.New("the commit loop has not started"),
		pending:  map[string]*pendingFile{},
		perOwner: map[ownerKey]int{},
		ownerRev: map[ownerKey]string{},
		ownerErr: map[ownerKey]error{},
		refused:  map[ownerKey]bool{},
		refusals: check.NewMemo(refusalTTL, maxRefusals),
		syncs:    metrics.NewSyncTracker(opts.Repo.URL),
	}, nil
}

// Mode returns ModeGit.
func (g *Git) Mode() string { return ModeGit }

// Apply queues the files of objs that differ from the repository, and the
// removal of files of prev's objects that left the set. When the owner has
// queued changes the Result is Pending (and carries the error of the last
// failed commit, if any); otherwise its Revision is the commit that holds
// the owner's files. The returned inventory keeps the entries whose removal
// is queued and not yet committed, so that a restart finds them again.
// A file whose content changed is checked before it is queued (its size,
// then the Validator): one the API server would refuse is not queued, its
// error is a check.RefusedError, and the owner's other files go on.
func (g *Git) Apply(ctx context.Context, owner Owner, objs []*unstructured.Unstructured, prev *commonv1.ResourceInventory) (*Result, error) {
	if err := owner.Validate(); err != nil {
		return nil, err
	}
	var errs []error
	unit := UnitOf(ctx)
	inSet := map[string]bool{}
	canPrune := true
	var files []*gitFile
	scopes := map[schema.GroupVersionKind]bool{}
	for i, o := range objs {
		if err := checkIdentity(i, o); err != nil {
			errs, canPrune = append(errs, err), false
			continue
		}
		raw := canon.IDOf(o).String()
		f, err := encodeFile(g.opts.Mapper, owner, o, scopes, unit)
		inSet[raw] = true
		if err != nil {
			errs = append(errs, err)
			continue
		}
		id := f.id.String()
		if inSet[id] && id != raw {
			errs = append(errs, fmt.Errorf("%s: listed twice in the set", f.id.Describe()))
			continue
		}
		inSet[id] = true
		files = append(files, f)
	}

	refused := g.lockChecked(ctx, owner, files)
	defer g.mu.Unlock()
	key := keyOf(owner)
	if g.retired {
		return &Result{Inventory: prev, Pending: true}, ErrRetired
	}
	if g.repo == nil {
		g.refused[key] = true
		return &Result{Inventory: prev, Pending: true}, fmt.Errorf("%w: %w", ErrNotOpen, g.openErr)
	}
	var entries []commonv1.ResourceRef
	var changed []string
	queued := map[string]bool{}
	digests := map[string]string{}
	for _, f := range files {
		cur := g.current(f.path)
		if other := fileOwnerOther(owner, cur); other != "" {
			errs = append(errs, fmt.Errorf("%s: held by %s, not committed for %s", f.id.Describe(), other, owner))
			continue
		}
		if err := refused[f.path]; err != nil {
			errs = append(errs, err)
			continue
		}
		if err := sealFile(g.opts.Encrypter, f, cur); err != nil {
			errs = append(errs, err)
			continue
		}
		if queued[f.path] {
			errs = append(errs, fmt.Errorf("%s: listed twice in the set", f.id.Describe()))
			continue
		}
		queued[f.path] = true
		digests[f.id.String()] = f.obj.GetAnnotations()[AnnotationAppliedDigest]
		entries = append(entries, commonv1.ResourceRef{ID: f.id.String(), Version: f.version})
		if !bytes.Equal(cur, f.data) {
			g.queue(f.path, f.data, key, unit)
			changed = append(changed, f.id.String())
		}
	}
	// Keep prev's entries of objects of the set that failed.
	for _, e := range prevEntries(prev) {
		if inSet[e.ID] && !containsID(entries, e.ID) {
			entries = append(entries, e)
		}
	}
	for _, e := range canon.Diff(prev, &commonv1.ResourceInventory{Entries: entries}) {
		if inSet[e.ID] {
			continue
		}
		if !canPrune {
			entries = append(entries, e)
			continue
		}
		if g.queueRemoval(owner, e, unit) {
			changed = append(changed, e.ID)
		}
		// A removal stays in the inventory until it is committed: the
		// caller records the inventory on the owner's status before the
		// commit is made, and a process that dies in between must find the
		// removal there again, or the file would stay in Git for good.
		if g.removalPending(key, e) {
			entries = append(entries, e)
		}
	}
	if len(changed) > 0 {
		g.ownerErr[key] = nil
	}
	canon.SortEntries(entries)
	sort.Strings(changed)
	res := &Result{Inventory: &commonv1.ResourceInventory{Entries: entries}, Changed: changed, Digests: digests}
	if g.perOwner[key] > 0 {
		res.Pending = true
		g.wake()
		if err := g.ownerErr[key]; err != nil {
			errs = append(errs, err)
		}
		return res, errors.Join(errs...)
	}
	res.Revision = g.revisionOf(key)
	return res, errors.Join(errs...)
}

// current returns the content a path will have after the queued changes,
// nil when absent. Callers hold g.mu.
func (g *Git) current(path string) []byte {
	if p, ok := g.pending[path]; ok {
		return p.data
	}
	return g.head[path]
}

// queue records a change of path for owner, of the shard unit unit; data
// nil removes the file. A change that brings the path back to its
// committed content cancels the queued one. Callers hold g.mu.
func (g *Git) queue(path string, data []byte, owner ownerKey, unit string) {
	if old, ok := g.pending[path]; ok {
		g.perOwner[old.owner]--
		delete(g.pending, path)
	}
	if bytes.Equal(g.head[path], data) && (data != nil) == (g.head[path] != nil) {
		return
	}
	g.pending[path] = &pendingFile{data: data, owner: owner, unit: unit}
	g.perOwner[owner]++
}

// revisionOf is the commit that holds an owner's files: the sink's last
// commit for it, or the head the sink started from. Callers hold g.mu.
func (g *Git) revisionOf(key ownerKey) string {
	if rev := g.ownerRev[key]; rev != "" {
		return rev
	}
	return g.headSHA
}

func (g *Git) wake() {
	select {
	case g.kick <- struct{}{}:
	default:
	}
}

func prevEntries(inv *commonv1.ResourceInventory) []commonv1.ResourceRef {
	if inv == nil {
		return nil
	}
	return inv.Entries
}

func containsID(entries []commonv1.ResourceRef, id string) bool {
	for _, e := range entries {
		if e.ID == id {
			return true
		}
	}
	return false
}
