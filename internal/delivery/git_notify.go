package delivery

import "sigs.k8s.io/controller-runtime/pkg/event"

// Subscribe returns the channel on which the sink notifies owners of kind
// (e.g. "Colony") once their queued changes are committed, or when a commit
// of them failed. Each event's object carries the owner's namespace and
// name. Subscribing twice to one kind returns the same channel.
func (g *Git) Subscribe(kind string) <-chan event.GenericEvent {
	return g.notices.Subscribe(kind)
}
