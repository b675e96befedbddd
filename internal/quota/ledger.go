package quota

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// maxAttempts bounds the re-checks of one charge after write conflicts,
// as Kubernetes' quota admission re-evaluates a conflicting write.
const maxAttempts = 8

// ErrContended is returned when a quota's status kept changing under a
// charge for every attempt; the caller backs off and tries again.
var ErrContended = errors.New("the quota kept changing under the charge")

// Refusal names the quota that has no room for a charge, and why.
type Refusal struct {
	Quota  string
	Excess []Excess
	// Full: the quota's in-flight list is full (an error, not a refusal).
	Full bool
}

func (r *Refusal) Error() string {
	msg := fmt.Sprintf("TenantQuota %q has no room:", r.Quota)
	for i, e := range r.Excess {
		if i > 0 {
			msg += ";"
		}
		msg += " " + e.String()
	}
	return msg
}

// Ledger writes the changes of what quotas count of a workspace. Every
// quota write carries the resourceVersion the change was checked against,
// so a concurrent writer (another worker, another replica or shard, the
// quota's own controller) makes it fail with a conflict; the quota is then
// read again, live, and the change checked anew. Reads come from the
// cache, or from the last version this process wrote when the cache has
// not caught up with it. Each write changes the quota's totals and one
// entry of its bounded in-flight list, whatever the tenant's size.
type Ledger struct {
	// Client reads quotas from the cache and writes their status.
	Client client.Client
	// Reader reads quotas live after a conflict, and workspaces live
	// before their share changes.
	Reader client.Reader
	// Clock stamps changes; the wall clock when nil.
	Clock clock.PassiveClock
	// SettleAfter is how long settled changes wait to leave their quota's
	// in-flight list, so that one write takes many; DefaultSettleAfter
	// when zero.
	SettleAfter time.Duration

	mu      sync.Mutex
	written map[string]*quotav1alpha1.TenantQuota
	// settled are the in-flight changes, by quota and workspace, whose
	// token the workspace recorded: the next write of the quota drops them.
	settled  map[string]map[types.UID]string
	flushing bool
	// dies, in tests, kills the process before a quota write: the write
	// and everything after it in the call are not done.
	dies func() bool
}

// errDied is what a call returns when dies killed the process.
var errDied = errors.New("the process died")

// DefaultSettleAfter is how long settled changes wait to leave a quota.
const DefaultSettleAfter = 500 * time.Millisecond

// Want is what a workspace should hold of one quota.
type Want struct {
	// Quota is the quota's name.
	Quota string
	// Charge is what the quota should count of the workspace.
	Charge quotav1alpha1.QuotaCharge
	// Check refuses a charge that grows past a limit (an admission);
	// without it, the charge is counted as it is (a workspace that runs
	// already, a stopped one that holds its place).
	Check bool
	// Loan are the terms a lender must still offer for a checked loan
	// (Plan.Wants); a checked loan without them is refused.
	Loan *LoanTerms
}

// Sync makes the quotas count a workspace as wanted, in name order, and
// no longer count it in any other quota of names (those that hold a share
// of it and no longer select it). It returns the workspace's records as
// they must now be written on its status, whether or not it refused: a
// refusal (or an error) puts back what this call counted before it,
// under new tokens that the records carry. ws is the workspace as
// reconciled; its records are read live before any quota is written, as
// the share a quota counts of it is its record when the quota lists no
// change of it; records (as reconciled) are returned unchanged when that
// read fails. A quota that no longer exists is skipped.
func (l *Ledger) Sync(ctx context.Context, ws client.Object, records []workspacesv1.WorkspaceQuotaCharge,
	wants []Want, holders []string) ([]workspacesv1.WorkspaceQuotaCharge, *Refusal, error) {
	ref := RefOf(ws)
	live := &workspacesv1.WorkspaceDeployment{}
	if err := l.Reader.Get(ctx, client.ObjectKeyFromObject(ws), live); err != nil {
		return records, nil, fmt.Errorf("reading the workspace's quota records: %w", err)
	}
	if live.UID != ref.UID {
		return records, nil, fmt.Errorf("workspace %s/%s: %w", ref.Namespace, ref.Name, ErrContended)
	}
	records = live.Status.QuotaCharges
	if err := backed(wants); err != nil {
		return records, nil, err
	}
	type step struct {
		name  string
		to    *quotav1alpha1.QuotaCharge
		check bool
		loan  *LoanTerms
	}
	var steps []step
	wanted := map[string]bool{}
	for _, w := range wants {
		c := w.Charge
		steps = append(steps, step{name: w.Quota, to: &c, check: w.Check, loan: w.Loan})
		wanted[w.Quota] = true
	}
	for _, h := range holders {
		if !wanted[h] {
			steps = append(steps, step{name: h})
			wanted[h] = true
		}
	}
	slices.SortFunc(steps, func(a, b step) int { return strings.Compare(a.name, b.name) })
	type undo struct {
		name string
		prev *quotav1alpha1.QuotaCharge
	}
	var done []undo
	move := func(name string, to *quotav1alpha1.QuotaCharge, check bool, loan *LoanTerms) (*quotav1alpha1.QuotaCharge, bool, error) {
		var prev *quotav1alpha1.QuotaCharge
		var moved bool
		var rec *workspacesv1.WorkspaceQuotaCharge
		err := l.update(ctx, name, func(q *quotav1alpha1.TenantQuota) (bool, *Refusal) {
			prev, moved, rec = Counted(q, ref, records), false, nil
			t := FindInflight(q, ref.UID)
			legacy := Find(q.Status.Charges, ref.UID) != nil
			if same(prev, to) && !legacy {
				if t != nil {
					r := RecordFor(q, *t)
					rec = &r
				}
				return false, nil
			}
			if check && to != nil {
				if IsLoan(*to) && (loan == nil || !Lends(q, *loan)) {
					return false, &Refusal{Quota: name, Excess: []Excess{{Note: "it no longer lends these GPUs to the cohort"}}}
				}
				if excess := Check(q, prev, *to); len(excess) > 0 {
					return false, &Refusal{Quota: name, Excess: excess}
				}
			}
			// To the second, as status keeps it: the change's time is where
			// the charge's usage ends and the next one's begins.
			if _, err := Move(q, ref, prev, to, metav1.NewTime(l.now().Truncate(time.Second))); err != nil {
				return false, &Refusal{Quota: name, Full: true}
			}
			r := RecordFor(q, *FindInflight(q, ref.UID))
			rec, moved = &r, true
			return true, nil
		})
		if rec != nil && err == nil {
			records = PutRecord(records, *rec)
		}
		return prev, moved, err
	}
	rollback := func() error {
		var errs []error
		for _, u := range slices.Backward(done) {
			if _, _, err := move(u.name, u.prev, false, nil); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
	for _, s := range steps {
		prev, moved, err := move(s.name, s.to, s.check, s.loan)
		if errors.Is(err, errDied) {
			return records, nil, err
		}
		var refusal *Refusal
		if errors.As(err, &refusal) {
			if refusal.Full {
				return records, nil, errors.Join(fmt.Errorf("TenantQuota %q: %w", s.name, ErrInflightFull), rollback())
			}
			return records, refusal, rollback()
		}
		if err != nil {
			return records, nil, errors.Join(err, rollback())
		}
		if moved {
			done = append(done, undo{name: s.name, prev: prev})
		}
	}
	return records, nil, nil
}

// same reports whether two shares are the same: both none, or the same amounts.
func same(a, b *quotav1alpha1.QuotaCharge) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return SameAmounts(*a, *b)
}

// Settle notes that a workspace's records are written: the in-flight
// changes they carry leave their quotas with the next write of each, or
// after SettleAfter.
func (l *Ledger) Settle(uid types.UID, records []workspacesv1.WorkspaceQuotaCharge) {
	if len(records) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.settled == nil {
		l.settled = map[string]map[types.UID]string{}
	}
	for _, r := range records {
		if l.settled[r.Quota] == nil {
			l.settled[r.Quota] = map[types.UID]string{}
		}
		l.settled[r.Quota][uid] = r.Token
	}
	if !l.flushing {
		l.flushing = true
		after := l.SettleAfter
		if after == 0 {
			after = DefaultSettleAfter
		}
		time.AfterFunc(after, l.flush)
	}
}

// flush writes the quotas that have settled changes, dropping them.
func (l *Ledger) flush() {
	l.mu.Lock()
	names := make([]string, 0, len(l.settled))
	for name := range l.settled {
		names = append(names, name)
	}
	l.flushing = false
	l.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, name := range names {
		_ = l.update(ctx, name, func(*quotav1alpha1.TenantQuota) (bool, *Refusal) { return false, nil })
	}
}

// dropSettled drops from a quota the settled changes this process knows
// of; it reports whether it dropped any.
func (l *Ledger) dropSettled(q *quotav1alpha1.TenantQuota) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	dropped := false
	for uid, token := range l.settled[q.Name] {
		if Drop(q, uid, token) {
			dropped = true
		}
	}
	return dropped
}

// forgetSettled forgets the settled changes a written quota no longer lists.
func (l *Ledger) forgetSettled(q *quotav1alpha1.TenantQuota) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for uid, token := range l.settled[q.Name] {
		if t := FindInflight(q, uid); t == nil || t.Token != token {
			delete(l.settled[q.Name], uid)
		}
	}
	if len(l.settled[q.Name]) == 0 {
		delete(l.settled, q.Name)
	}
}

// Write applies a change to a quota's status with the same optimistic
// concurrency as a charge; the quota's controller writes through it.
func (l *Ledger) Write(ctx context.Context, name string, change func(*quotav1alpha1.TenantQuota) bool) error {
	return l.update(ctx, name, func(q *quotav1alpha1.TenantQuota) (bool, *Refusal) { return change(q), nil })
}

// update reads a quota, lets change edit it, refreshes what derives from
// the ledger, and writes the status with the resourceVersion it read,
// re-reading live and retrying on conflict. A quota that is gone is not an
// error; a refusal from change is returned as the error.
func (l *Ledger) update(ctx context.Context, name string, change func(*quotav1alpha1.TenantQuota) (bool, *Refusal)) error {
	live := false
	for range maxAttempts {
		q, err := l.read(ctx, name, live)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading TenantQuota %q: %w", name, err)
		}
		converted := EnsureTotals(q)
		changed, refusal := change(q)
		if refusal != nil {
			return refusal
		}
		if dropped := l.dropSettled(q); !changed && !dropped && !converted {
			l.forgetSettled(q)
			return nil
		}
		Refresh(q)
		if l.dies != nil && l.dies() {
			return errDied
		}
		err = l.Client.Status().Update(ctx, q)
		switch {
		case err == nil:
			l.remember(q)
			l.forgetSettled(q)
			return nil
		case apierrors.IsConflict(err):
			live = true
			continue
		case apierrors.IsNotFound(err):
			return nil
		default:
			return fmt.Errorf("writing the status of TenantQuota %q: %w", name, err)
		}
	}
	return fmt.Errorf("TenantQuota %q: %w", name, ErrContended)
}

// read returns a copy of a quota: live, or the newer of the cache and the
// version this process last wrote.
func (l *Ledger) read(ctx context.Context, name string, live bool) (*quotav1alpha1.TenantQuota, error) {
	q := &quotav1alpha1.TenantQuota{}
	reader := client.Reader(l.Client)
	if live && l.Reader != nil {
		reader = l.Reader
	}
	if err := reader.Get(ctx, client.ObjectKey{Name: name}, q); err != nil {
		if apierrors.IsNotFound(err) {
			l.forget(name)
		}
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if w := l.written[name]; w != nil && w.UID == q.UID && newer(w.ResourceVersion, q.ResourceVersion) {
		return w.DeepCopy(), nil
	}
	return q, nil
}

func (l *Ledger) remember(q *quotav1alpha1.TenantQuota) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.written == nil {
		l.written = map[string]*quotav1alpha1.TenantQuota{}
	}
	l.written[q.Name] = q.DeepCopy()
}

func (l *Ledger) forget(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.written, name)
}

// newer compares resourceVersions as integers, as the API server's quota
// admission does; an unparsable one is never newer.
func newer(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	return errA == nil && errB == nil && x > y
}

func (l *Ledger) now() time.Time {
	if l.Clock != nil {
		return l.Clock.Now()
	}
	return time.Now()
}
