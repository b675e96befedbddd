// Package priority orders the work of Apiary's controllers in
// controller-runtime's priority queue (on by default since v0.23). A
// workspace's creation and the moment its release turns Deployed enter the
// queue with the same priority otherwise, so at a thousand new workspaces
// the one a user is waiting on queues behind the creation work of all the
// others. Events that end what a user waits for — a release deployed or
// failed — are raised to Outcome; everything else keeps
// controller-runtime's priorities (Default, and Low for the initial list
// and resyncs).
//
// Creation work cannot starve behind raised events: each raised event is
// the end of one workspace's rollout, so there are never more of them than
// workspaces created before, and each costs one short reconcile (reading
// the ServiceSet back and writing Running). A raised request that requeues
// keeps its priority, as controller-runtime keeps the priority an item was
// dequeued with, but requeues only after its delay or backoff.
package priority

import (
	"context"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

const (
	// Outcome is the priority of the events a user is waiting on.
	Outcome = 10
	// Default is controller-runtime's priority of an event.
	Default = 0
	// Low is controller-runtime's priority of the initial list and resyncs.
	Low = handler.LowPriority
)

// RaiseFunc says whether an update is one a user waits on.
type RaiseFunc[T client.Object] func(old, updated T) bool

// MapOnUpdate returns a handler that enqueues the requests fn maps an
// object to, as handler.EnqueueRequestsFromMapFunc does, except that an
// update raise accepts is enqueued at priority p. Without a priority queue
// it behaves as EnqueueRequestsFromMapFunc.
func MapOnUpdate[T client.Object](fn handler.TypedMapFunc[T, reconcile.Request], raise RaiseFunc[T], p int) handler.TypedEventHandler[T, reconcile.Request] {
	return &raising[T]{base: handler.TypedEnqueueRequestsFromMapFunc(fn), fn: fn, raise: raise, priority: p}
}

type raising[T client.Object] struct {
	base     handler.TypedEventHandler[T, reconcile.Request]
	fn       handler.TypedMapFunc[T, reconcile.Request]
	raise    RaiseFunc[T]
	priority int
}

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

func (h *raising[T]) Create(ctx context.Context, e event.TypedCreateEvent[T], q queue) {
	h.base.Create(ctx, e, q)
}

func (h *raising[T]) Delete(ctx context.Context, e event.TypedDeleteEvent[T], q queue) {
	h.base.Delete(ctx, e, q)
}

func (h *raising[T]) Generic(ctx context.Context, e event.TypedGenericEvent[T], q queue) {
	h.base.Generic(ctx, e, q)
}

func (h *raising[T]) Update(ctx context.Context, e event.TypedUpdateEvent[T], q queue) {
	pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request])
	if !ok || !h.raise(e.ObjectOld, e.ObjectNew) {
		h.base.Update(ctx, e, q)
		return
	}
	reqs := h.fn(ctx, e.ObjectNew)
	seen := make(map[reconcile.Request]bool, len(reqs))
	for _, r := range reqs {
		if !seen[r] {
			seen[r] = true
			pq.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(h.priority)}, r)
		}
	}
}
