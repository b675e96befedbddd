package wake

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
)

var (
	a  = types.NamespacedName{Namespace: "ns", Name: "a"}
	b  = types.NamespacedName{Namespace: "ns", Name: "b"}
	c1 = Topic{Kind: "Capacity", Key: "ns/c1"}
	c2 = Topic{Kind: "Capacity", Key: "ns/c2"}
	q  = Topic{Kind: "Quota"}
)

func TestSettleReplacesWhatAWaiterWaitsFor(t *testing.T) {
	g := NewWithT(t)
	w := New()
	g.Expect(w.Settle(w.Begin(), a, c1, q, c1)).To(BeFalse())
	g.Expect(w.Topics(a)).To(Equal([]Topic{c1, q}))
	g.Expect(w.Fire(c1)).To(Equal([]types.NamespacedName{a}))
	g.Expect(w.Fire(q)).To(Equal([]types.NamespacedName{a}))

	g.Expect(w.Settle(w.Begin(), a, c2)).To(BeFalse())
	g.Expect(w.Fire(c1)).To(BeEmpty(), "a left c1")
	g.Expect(w.Fire(c2)).To(Equal([]types.NamespacedName{a}))

	g.Expect(w.Settle(w.Begin(), a)).To(BeFalse())
	g.Expect(w.Fire(c2)).To(BeEmpty())
	g.Expect(w.Len()).To(BeZero())
}

func TestFireReturnsEveryWaiterSorted(t *testing.T) {
	g := NewWithT(t)
	w := New()
	w.Settle(w.Begin(), b, c1)
	w.Settle(w.Begin(), a, c1, c2)
	g.Expect(w.Fire(c1)).To(Equal([]types.NamespacedName{a, b}))
	g.Expect(w.Fire(c1)).To(Equal([]types.NamespacedName{a, b}), "waiters wait until they settle again")
	w.Forget(a)
	g.Expect(w.Fire(c1)).To(Equal([]types.NamespacedName{b}))
	g.Expect(w.Fire(c2)).To(BeEmpty())
	g.Expect(w.Topics(a)).To(BeEmpty())
}

func TestSettleReportsAFireSinceItsToken(t *testing.T) {
	cases := []struct {
		name   string
		run    func(w *Waits) bool
		missed bool
	}{
		{"fired before the token", func(w *Waits) bool {
			w.Fire(c1)
			return w.Settle(w.Begin(), a, c1)
		}, false},
		{"fired after the token", func(w *Waits) bool {
			tok := w.Begin()
			w.Fire(c1)
			return w.Settle(tok, a, c1)
		}, true},
		{"another topic fired", func(w *Waits) bool {
			tok := w.Begin()
			w.Fire(c2)
			return w.Settle(tok, a, c1)
		}, false},
		{"fired while another reconcile ran, after this one's token", func(w *Waits) bool {
			other := w.Begin()
			tok := w.Begin()
			w.Fire(c1)
			w.Settle(other, b)
			return w.Settle(tok, a, c1)
		}, true},
		{"fired while only an older reconcile ran", func(w *Waits) bool {
			other := w.Begin()
			w.Fire(c1)
			tok := w.Begin()
			w.Settle(other, b)
			return w.Settle(tok, a, c1)
		}, false},
		{"fired when nothing ran", func(w *Waits) bool {
			w.Settle(w.Begin(), b)
			w.Fire(c1)
			return w.Settle(w.Begin(), a, c1)
		}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(tc.run(New())).To(Equal(tc.missed))
		})
	}
}

// TestNoWakeUpIsLost checks every interleaving of one reconcile (Begin,
// read the awaited state, Settle waiting for it unless it was ready) with a
// change of that state followed by its Fire, as an informer updates its
// store and then calls the handlers; once with a waiter new to Waits and
// once with one that waited already. Whenever the reconcile read the old
// state, Settle reports a miss or the Fire after it returns the waiter.
func TestNoWakeUpIsLost(t *testing.T) {
	checked := 0
	for _, waitedBefore := range []bool{false, true} {
		for _, order := range interleave(3, 2) {
			w := New()
			if waitedBefore {
				w.Settle(w.Begin(), a, c1)
			}
			ready, settled := false, false
			var tok Token
			var readReady, missed, wokenAfterSettle bool
			waiterStep, changerStep := 0, 0
			for _, who := range order {
				if who == 1 {
					if changerStep == 0 {
						ready = true
					} else if slices.Contains(w.Fire(c1), a) && settled {
						wokenAfterSettle = true
					}
					changerStep++
					continue
				}
				switch waiterStep {
				case 0:
					tok = w.Begin()
				case 1:
					readReady = ready
				case 2:
					if readReady {
						missed = w.Settle(tok, a)
					} else {
						missed = w.Settle(tok, a, c1)
					}
					settled = true
				}
				waiterStep++
			}
			checked++
			if !readReady && !missed && !wokenAfterSettle {
				t.Errorf("waited before %t, order %v (0: reconcile step, 1: change then fire): the reconcile read the old state and is never woken",
					waitedBefore, order)
			}
		}
	}
	t.Logf("%d interleavings checked", checked)
}

// interleave lists every order of n steps of actor 0 and m of actor 1.
func interleave(n, m int) [][]int {
	if n == 0 && m == 0 {
		return [][]int{{}}
	}
	var out [][]int
	if n > 0 {
		for _, rest := range interleave(n-1, m) {
			out = append(out, append([]int{0}, rest...))
		}
	}
	if m > 0 {
		for _, rest := range interleave(n, m-1) {
			out = append(out, append([]int{1}, rest...))
		}
	}
	return out
}

// TestWaitersConcurrentlyAllSeeTheLastChange runs waiters that reconcile
// until they read the last version of a state while a changer bumps it and
// fires; each waiter runs again only when told it missed a fire or when a
// fire returned it. Every waiter must end having read the last version.
func TestWaitersConcurrentlyAllSeeTheLastChange(t *testing.T) {
	const waiters, changes = 16, 200
	w := New()
	var version atomic.Int64
	wake := make([]chan struct{}, waiters)
	for i := range wake {
		wake[i] = make(chan struct{}, 1)
	}
	key := func(i int) types.NamespacedName { return types.NamespacedName{Name: fmt.Sprint(i)} }
	var wg sync.WaitGroup
	seen := make([]int64, waiters)
	for i := range waiters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				tok := w.Begin()
				v := version.Load()
				seen[i] = v
				if v == changes {
					w.Settle(tok, key(i))
					return
				}
				if w.Settle(tok, key(i), c1) {
					continue
				}
				select {
				case <-wake[i]:
				case <-time.After(10 * time.Second):
					return // lost: seen[i] says so
				}
			}
		}()
	}
	for range changes {
		version.Add(1)
		for _, k := range w.Fire(c1) {
			var i int
			_, _ = fmt.Sscan(k.Name, &i)
			select {
			case wake[i] <- struct{}{}:
			default:
			}
		}
	}
	wg.Wait()
	for i, v := range seen {
		if v != changes {
			t.Errorf("waiter %d last read version %d of %d: a wake-up was lost", i, v, changes)
		}
	}
}
