package delivery

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// notifier hands "your changes were committed (or failed)" notices to the
// controllers, one coalescing queue per owner kind.
type notifier struct {
	mu     sync.Mutex
	queues map[string]*ownerQueue
}

// ownerQueue is an unbounded, coalescing queue of owners of one kind, drained
// into out by a goroutine, so the commit loop never blocks on a controller.
type ownerQueue struct {
	out  chan event.GenericEvent
	wake chan struct{}

	mu      sync.Mutex
	queued  map[ownerKey]bool
	backlog []ownerKey
}

// Subscribe returns the channel on which the sink notifies owners of kind
// (e.g. "Colony") once their queued changes are committed, or when a commit
// of them failed. Each event's object carries the owner's namespace and
// name. Subscribing twice to one kind returns the same channel.
func (g *Git) Subscribe(kind string) <-chan event.GenericEvent {
	return g.notifier.subscribe(kind)
}

func (n *notifier) subscribe(kind string) <-chan event.GenericEvent {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.queues == nil {
		n.queues = map[string]*ownerQueue{}
	}
	if q, ok := n.queues[kind]; ok {
		return q.out
	}
	q := &ownerQueue{out: make(chan event.GenericEvent), wake: make(chan struct{}, 1), queued: map[ownerKey]bool{}}
	n.queues[kind] = q
	go q.drain()
	return q.out
}

func (n *notifier) notify(keys map[ownerKey]bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for k := range keys {
		if q, ok := n.queues[k.kind]; ok {
			q.push(k)
		}
	}
}

func (q *ownerQueue) push(k ownerKey) {
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
func (q *ownerQueue) drain() {
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
			TypeMeta:   metav1.TypeMeta{Kind: k.kind},
			ObjectMeta: metav1.ObjectMeta{Namespace: k.namespace, Name: k.name},
		}}
	}
}
