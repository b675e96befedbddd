// Package notice hands notices about objects to controllers: one unbounded,
// coalescing queue per kind, drained into a channel a controller watches
// (controller-runtime's source.Channel), so that whoever sends a notice
// never blocks on a controller.
package notice

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// Key names the object a notice is about.
type Key struct{ Kind, Namespace, Name string }

// Board hands notices to controllers, one coalescing queue per kind. The
// zero value is ready to use.
type Board struct {
	mu     sync.Mutex
	queues map[string]*queue
}

// queue is an unbounded, coalescing queue of owners of one kind, drained
// into out by a goroutine, so the commit loop never blocks on a controller.
type queue struct {
	out  chan event.GenericEvent
	wake chan struct{}

	mu      sync.Mutex
	queued  map[Key]bool
	backlog []Key
}

// Subscribe returns the channel on which the notices of kind arrive. Each
// event's object carries the key's namespace and name. Subscribing twice to
// one kind returns the same channel; a subscription lives as long as the
// Board.
func (n *Board) Subscribe(kind string) <-chan event.GenericEvent {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.queues == nil {
		n.queues = map[string]*queue{}
	}
	if q, ok := n.queues[kind]; ok {
		return q.out
	}
	q := &queue{out: make(chan event.GenericEvent), wake: make(chan struct{}, 1), queued: map[Key]bool{}}
	n.queues[kind] = q
	go q.drain()
	return q.out
}

// Notify queues a notice for each key whose kind has a subscriber.
func (n *Board) Notify(keys map[Key]bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for k := range keys {
		if q, ok := n.queues[k.Kind]; ok {
			q.push(k)
		}
	}
}

func (q *queue) push(k Key) {
	q.mu.Lock()
	if !q.queued[k] {
		q.queued[k] = true
		q.backlog = append(q.backlog, k)
	}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// drain runs for the life of the process; a subscription lives as long as
// the sink.
func (q *queue) drain() {
	for {
		q.mu.Lock()
		if len(q.backlog) == 0 {
			q.mu.Unlock()
			<-q.wake
			continue
		}
		k := q.backlog[0]
		q.backlog = q.backlog[1:]
		delete(q.queued, k)
		q.mu.Unlock()
		q.out <- event.GenericEvent{Object: &metav1.PartialObjectMetadata{
			TypeMeta:   metav1.TypeMeta{Kind: k.Kind},
			ObjectMeta: metav1.ObjectMeta{Namespace: k.Namespace, Name: k.Name},
		}}
	}
}
