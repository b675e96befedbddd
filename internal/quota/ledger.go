package quota

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
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

// Ledger writes charges to the status of TenantQuotas. Every write carries
// the resourceVersion the charge was checked against, so a concurrent
// writer (another worker, another replica, the quota's own controller)
// makes it fail with a conflict; the quota is then read again, live, and
// the charge checked anew. Reads come from the cache, or from the last
// version this process wrote when the cache has not caught up with it.
type Ledger struct {
	// Client reads quotas from the cache and writes their status.
	Client client.Client
	// Reader reads quotas live after a conflict.
	Reader client.Reader
	// Clock stamps charges; the wall clock when nil. It must be the
	// workspace reconciler's, whose admissions the charges are.
	Clock clock.PassiveClock

	mu      sync.Mutex
	written map[string]*quotav1alpha1.TenantQuota
}

// Reserve charges a request to every named quota, in name order, or to
// none: a refusal (or an error) removes what this call charged before it.
// A quota that no longer exists is skipped. A charge already in a ledger is
// left as it is.
func (l *Ledger) Reserve(ctx context.Context, names []string, req Request) (*Refusal, error) {
	names = slices.Sorted(slices.Values(names))
	charge := req.Charge(metav1.NewTime(l.now()))
	type undo struct {
		name string
		prev *quotav1alpha1.QuotaCharge
	}
	var done []undo
	rollback := func() error {
		var errs []error
		for _, u := range done {
			if err := l.update(ctx, u.name, func(q *quotav1alpha1.TenantQuota) (bool, *Refusal) {
				return restore(q, req.UID, u.prev), nil
			}); err != nil {
				errs = append(errs, err)
			}
		}
		return errors.Join(errs...)
	}
	for _, name := range names {
		var prev *quotav1alpha1.QuotaCharge
		var charged bool
		err := l.update(ctx, name, func(q *quotav1alpha1.TenantQuota) (bool, *Refusal) {
			prev, charged = nil, false
			if old := Find(q.Status.Charges, req.UID); old != nil {
				if SameAmounts(*old, charge) {
					return false, nil // charged before this call: not this call's to undo
				}
				prev = old.DeepCopy()
			}
			if excess := Check(q, charge); len(excess) > 0 {
				return false, &Refusal{Quota: name, Excess: excess}
			}
			q.Status.Charges = Upsert(q.Status.Charges, charge)
			charged = true
			return true, nil
		})
		var refusal *Refusal
		if errors.As(err, &refusal) {
			return refusal, rollback()
		}
		if err != nil {
			return nil, errors.Join(err, rollback())
		}
		if charged {
			done = append(done, undo{name: name, prev: prev})
		}
	}
	return nil, nil
}

// restore puts back a workspace's earlier charge, or removes its charge.
func restore(q *quotav1alpha1.TenantQuota, uid types.UID, prev *quotav1alpha1.QuotaCharge) bool {
	if prev != nil {
		q.Status.Charges = Upsert(q.Status.Charges, *prev)
		return true
	}
	var found bool
	q.Status.Charges, found = Remove(q.Status.Charges, uid)
	return found
}

// Release removes a workspace's charge from the named quotas.
func (l *Ledger) Release(ctx context.Context, names []string, uid types.UID) error {
	var errs []error
	for _, name := range slices.Sorted(slices.Values(names)) {
		if err := l.update(ctx, name, func(q *quotav1alpha1.TenantQuota) (bool, *Refusal) {
			return restore(q, uid, nil), nil
		}); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Write applies a change to a quota's ledger and status with the same
// optimistic concurrency as a charge; the quota's controller writes its
// status through it.
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
		changed, refusal := change(q)
		if refusal != nil {
			return refusal
		}
		if !changed {
			return nil
		}
		Refresh(q)
		err = l.Client.Status().Update(ctx, q)
		switch {
		case err == nil:
			l.remember(q)
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
