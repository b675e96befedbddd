package delivery

import (
	"context"
	"fmt"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/event"
)

// GitSet holds Git sinks made on first use, one per key (a tenant, a
// regional cluster), runs each until the set stops, and merges their
// notices into one channel per owner kind. Add it to the manager: it is a
// Runnable.
type GitSet[K comparable] struct {
	// New makes the sink of a key; it is called once per key, and again
	// after a failure.
	New func(ctx context.Context, key K) (*Git, error)
	// Also feeds the channels of Subscribe too, e.g. a default sink.
	Also interface {
		Subscribe(kind string) <-chan event.GenericEvent
	}

	mu      sync.Mutex
	ctx     context.Context
	started chan struct{} // closed by Start
	sinks   map[K]*Git
	subs    map[string]chan event.GenericEvent
}

// Start keeps the context that the sinks run with until ctx ends.
func (s *GitSet[K]) Start(ctx context.Context) error {
	s.mu.Lock()
	s.ctx = ctx
	close(s.startedLocked())
	s.mu.Unlock()
	<-ctx.Done()
	return nil
}

func (s *GitSet[K]) startedLocked() chan struct{} {
	if s.started == nil {
		s.started = make(chan struct{})
	}
	return s.started
}

// NeedLeaderElection makes the sinks run on the leader only, like the
// controllers that feed them.
func (s *GitSet[K]) NeedLeaderElection() bool { return true }

// Get returns the sink of key, making and starting it on first use. Before
// the set starts it waits, as long as ctx allows.
func (s *GitSet[K]) Get(ctx context.Context, key K) (*Git, error) {
	s.mu.Lock()
	started := s.startedLocked()
	s.mu.Unlock()
	select {
	case <-started:
	case <-ctx.Done():
		return nil, fmt.Errorf("the Git sinks have not started yet: %w", ctx.Err())
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if g, ok := s.sinks[key]; ok {
		return g, nil
	}
	g, err := s.New(ctx, key)
	if err != nil {
		return nil, err
	}
	if s.sinks == nil {
		s.sinks = map[K]*Git{}
	}
	s.sinks[key] = g
	for kind, ch := range s.subs {
		go forward(g.Subscribe(kind), ch)
	}
	go func() { _ = g.Start(s.ctx) }()
	return g, nil
}

// Subscribe returns one channel per kind fed by every sink of the set, now
// and later, and by Also.
func (s *GitSet[K]) Subscribe(kind string) <-chan event.GenericEvent {
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
	for _, g := range s.sinks {
		go forward(g.Subscribe(kind), ch)
	}
	return ch
}

func forward(from <-chan event.GenericEvent, to chan<- event.GenericEvent) {
	for e := range from {
		to <- e
	}
}
