// Package wake remembers what each reconcile stopped to wait for, so that
// an event of that thing wakes exactly its waiters, whatever the cache says
// of the waiters' own status.
//
// A watch mapping that picks the objects to wake by their cached status
// loses wake-ups: a reconcile decides to wait, the thing it waits for
// changes before the reconcile's status write reaches the cache, the
// mapping reads the old status and drops the event, and nothing brings the
// waiter back. Waits closes that window. A reconcile takes a Token before
// it reads anything and hands its topics to Settle when it ends; a mapping
// Fires the topic of the change it sees and enqueues the waiters Fire
// returns. A topic fired between the Token and Settle makes Settle report
// a miss: the reconcile may have read the state from before the change, so
// it must run again. An informer updates its store before it calls the
// handlers, so every change is either visible to the reconcile's reads or
// fired after its Token.
package wake

import (
	"cmp"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// Topic is something a reconcile waits for: a kind of thing and, when the
// kind has several, which one (a cluster's key, say).
type Topic struct {
	Kind string
	Key  string
}

// Token marks the start of one reconcile; Settle ends it.
type Token struct{ seq uint64 }

// Waits holds the waiters of each topic. The zero value is not usable;
// New makes one. Its methods may be called from any goroutine.
type Waits struct {
	mu sync.Mutex
	// seq counts fires.
	seq uint64
	// inflight counts tokens not yet settled; fired is kept only while a
	// token may need it.
	inflight int
	// fired is the seq of the last fire of each topic since inflight was
	// last zero.
	fired   map[Topic]uint64
	waiters map[Topic]map[types.NamespacedName]struct{}
	topics  map[types.NamespacedName][]Topic
}

// New returns an empty Waits.
func New() *Waits {
	return &Waits{
		fired:   map[Topic]uint64{},
		waiters: map[Topic]map[types.NamespacedName]struct{}{},
		topics:  map[types.NamespacedName][]Topic{},
	}
}

// Begin starts a reconcile: call it before the reconcile reads anything,
// and Settle exactly once when it ends.
func (w *Waits) Begin() Token {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.inflight++
	return Token{seq: w.seq}
}

// Settle ends the reconcile of tok: waiter now waits for topics, and for
// nothing else. It reports whether one of them fired since tok was taken,
// in which case the waiter must be reconciled again.
func (w *Waits) Settle(tok Token, waiter types.NamespacedName, topics ...Topic) (missed bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.drop(waiter)
	topics = compact(topics)
	for _, t := range topics {
		set, ok := w.waiters[t]
		if !ok {
			set = map[types.NamespacedName]struct{}{}
			w.waiters[t] = set
		}
		set[waiter] = struct{}{}
		if w.fired[t] > tok.seq {
			missed = true
		}
	}
	if len(topics) > 0 {
		w.topics[waiter] = topics
	}
	w.inflight--
	if w.inflight == 0 {
		clear(w.fired) // no token is left that could have missed them
	}
	return missed
}

// Fire records a change of topic and returns its waiters, sorted. They
// keep waiting until their next Settle.
func (w *Waits) Fire(t Topic) []types.NamespacedName {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.seq++
	if w.inflight > 0 {
		w.fired[t] = w.seq
	}
	set := w.waiters[t]
	if len(set) == 0 {
		return nil
	}
	out := make([]types.NamespacedName, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	slices.SortFunc(out, func(a, b types.NamespacedName) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}

// Forget drops a waiter that is gone.
func (w *Waits) Forget(waiter types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.drop(waiter)
}

// Topics returns what a waiter waits for, for tests and diagnostics.
func (w *Waits) Topics(waiter types.NamespacedName) []Topic {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.topics[waiter])
}

// Len is how many waiters wait for something.
func (w *Waits) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.topics)
}

func (w *Waits) drop(waiter types.NamespacedName) {
	for _, t := range w.topics[waiter] {
		set := w.waiters[t]
		delete(set, waiter)
		if len(set) == 0 {
			delete(w.waiters, t)
		}
	}
	delete(w.topics, waiter)
}

// compact sorts topics and drops repeats.
func compact(ts []Topic) []Topic {
	if len(ts) == 0 {
		return nil
	}
	out := slices.Clone(ts)
	slices.SortFunc(out, func(a, b Topic) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Key, b.Key))
	})
	return slices.Compact(out)
}
