// Package sinkset runs sinks made on first use, one per key (a tenant, a
// regional cluster), each until it is removed or the set stops, and merges
// their notices into one channel per owner kind.
package sinkset

import (
	"context"
	"fmt"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/event"
)

// Sink is what a set runs: a loop until its context ends, and notices per
// owner kind.
type Sink interface {
	Start(ctx context.Context) error
	Subscribe(kind string) <-chan event.GenericEvent
}

// Set holds sinks made on first use, one per key, runs each until the set
// stops, and merges their notices into one channel per owner kind. Add it
// to the manager: it is a Runnable.
type Set[K comparable, S Sink] struct {
	// New makes the sink of a key; it is called once per key, and again
	// after a failure.
	New func(ctx context.Context, key K) (S, error)
	// Also feeds the channels of Subscribe too, e.g. a default sink.
	Also interface {
		Subscribe(kind string) <-chan event.GenericEvent
	}

	mu      sync.Mutex
	ctx     context.Context
	started chan struct{} // closed by Start
	sinks   map[K]*running[S]
	subs    map[string]chan event.GenericEvent
}

// running is a sink of the set and how to stop it.
type running[S Sink] struct {
	g      S
	cancel context.CancelFunc
	done   chan struct{}
}

// Start keeps the context that the sinks run with until ctx ends.
func (s *Set[K, S]) Start(ctx context.Context) error {
	s.mu.Lock()
	s.ctx = ctx
	close(s.startedLocked())
	s.mu.Unlock()
	<-ctx.Done()
	return nil
}

func (s *Set[K, S]) startedLocked() chan struct{} {
	if s.started == nil {
		s.started = make(chan struct{})
	}
	return s.started
}

// NeedLeaderElection makes the sinks run on the leader only, like the
// controllers that feed them.
func (s *Set[K, S]) NeedLeaderElection() bool { return true }

// Get returns the sink of key, making and starting it on first use. Before
// the set starts it waits, as long as ctx allows.
func (s *Set[K, S]) Get(ctx context.Context, key K) (S, error) {
	s.mu.Lock()
	started := s.startedLocked()
	s.mu.Unlock()
	select {
	case <-started:
	case <-ctx.Done():
		var none S
		return none, fmt.Errorf("the sinks have not started yet: %w", ctx.Err())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.sinks[key]; ok {
		return r.g, nil
	}
	g, err := s.New(ctx, key)
	if err != nil {
		var none S
		return none, err
	}
	if s.sinks == nil {
		s.sinks = map[K]*running[S]{}
	}
	runCtx, cancel := context.WithCancel(s.ctx)
	r := &running[S]{g: g, cancel: cancel, done: make(chan struct{})}
	s.sinks[key] = r
	for kind, ch := range s.subs {
		go forward(g.Subscribe(kind), ch)
	}
	go func() {
		defer close(r.done)
		_ = g.Start(runCtx)
	}()
	return g, nil
}

// Lookup returns the sink of key when the set has made it.
func (s *Set[K, S]) Lookup(key K) (S, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.sinks[key]
	if !ok {
		var none S
		return none, false
	}
	return r.g, true
}

// Remove stops the sink of key and forgets it, waiting until its commit
// loop returned, so that a sink made again for key may use its clone. The
// notices it sent stay delivered; it sends no more.
func (s *Set[K, S]) Remove(key K) {
	s.mu.Lock()
	r, ok := s.sinks[key]
	delete(s.sinks, key)
	s.mu.Unlock()
	if ok {
		r.cancel()
		<-r.done
	}
}

// Subscribe returns one channel per kind fed by every sink of the set, now
// and later, and by Also.
func (s *Set[K, S]) Subscribe(kind string) <-chan event.GenericEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.subs == nil {
		s.subs = map[string]chan event.GenericEvent{}
	}
	if ch, ok := s.subs[kind]; ok {
		return ch
	}
	ch := make(chan event.GenericEvent)
	s.subs[kind] = ch
	if s.Also != nil {
		go forward(s.Also.Subscribe(kind), ch)
	}
	for _, r := range s.sinks {
		go forward(r.g.Subscribe(kind), ch)
	}
	return ch
}

func forward(from <-chan event.GenericEvent, to chan<- event.GenericEvent) {
	for e := range from {
		to <- e
	}
}
