package childcluster

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
)

// Kind is a kind of child-cluster object whose changes are notified.
type Kind string

const (
	// NodeKind is a Node of a child cluster.
	NodeKind Kind = "Node"
	// PodKind is a Pod of a child cluster.
	PodKind Kind = "Pod"
	// GatewayKind is a Gateway (gateway.networking.k8s.io/v1) of a cluster,
	// or the Gateway API becoming served.
	GatewayKind Kind = "Gateway"
)

// ClusterObject returns the object that notifications about a cluster carry:
// a ClusterDeployment's metadata with only its namespace and name.
func ClusterObject(cd types.NamespacedName) *metav1.PartialObjectMetadata {
	return &metav1.PartialObjectMetadata{
		TypeMeta:   metav1.TypeMeta{APIVersion: k0rdentv1beta1.GroupVersion.String(), Kind: "ClusterDeployment"},
		ObjectMeta: metav1.ObjectMeta{Namespace: cd.Namespace, Name: cd.Name},
	}
}

// Events returns the Manager's default subscription (the same channel on every
// call): one event per cluster whose watched Nodes, Pods or Gateways changed
// or whose reachability changed. Give it to one controller only; use Subscribe for more.
func (m *Manager) Events() <-chan event.GenericEvent {
	m.eventsOnce.Do(func() { m.events = m.Subscribe() })
	return m.events
}

// Source returns a controller source fed by a new subscription, for
// builder.WatchesRawSource; h maps the ClusterObject to requests.
func (m *Manager) Source(h handler.EventHandler, kinds ...Kind) source.Source {
	return source.Channel(m.Subscribe(kinds...), h)
}

// Subscribe returns a new channel receiving an event (its object is
// ClusterObject) whenever a Node, Pod or Gateway of a watched cluster is
// added, deleted or changed in a field the cache keeps, whenever the Gateway
// API becomes served or stops being served, and whenever the cluster becomes
// unreachable or reachable again. With kinds, only changes of those
// kinds are delivered (reachability changes always are). Notifications are
// coalesced: at most one per cluster is pending, and informers never block on
// a slow reader. The channel is never closed.
func (m *Manager) Subscribe(kinds ...Kind) <-chan event.GenericEvent {
	s := &subscription{
		out:     make(chan event.GenericEvent),
		wake:    make(chan struct{}, 1),
		pending: map[types.NamespacedName]bool{},
	}
	if len(kinds) > 0 {
		s.kinds = map[Kind]bool{}
		for _, k := range kinds {
			s.kinds[k] = true
		}
	}
	m.subsMu.Lock()
	defer m.subsMu.Unlock()
	if m.isStopped() {
		return s.out
	}
	m.subs = append(m.subs, s)
	m.wg.Go(func() { s.pump(m.stopCh) })
	return s.out
}

// notify queues a notification for cluster cd; kind "" is a reachability change.
func (m *Manager) notify(cd types.NamespacedName, kind Kind) {
	m.subsMu.RLock()
	defer m.subsMu.RUnlock()
	for _, s := range m.subs {
		if kind == "" || s.kinds == nil || s.kinds[kind] {
			s.enqueue(cd)
		}
	}
}

// subscription is one coalescing queue of cluster notifications.
type subscription struct {
	kinds map[Kind]bool
	out   chan event.GenericEvent
	wake  chan struct{}

	mu      sync.Mutex
	pending map[types.NamespacedName]bool
	queue   []types.NamespacedName
}

func (s *subscription) enqueue(cd types.NamespacedName) {
	s.mu.Lock()
	if !s.pending[cd] {
		s.pending[cd] = true
		s.queue = append(s.queue, cd)
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// pump delivers queued notifications until stop is closed. A cluster leaves
// the pending set when its event is handed over, so a change that arrives
// while the reader handles it queues a new one.
func (s *subscription) pump(stop <-chan struct{}) {
	for {
		s.mu.Lock()
		if len(s.queue) == 0 {
			s.mu.Unlock()
			select {
			case <-s.wake:
				continue
			case <-stop:
				return
			}
		}
		cd := s.queue[0]
		s.queue[0] = types.NamespacedName{}
		s.queue = s.queue[1:]
		delete(s.pending, cd)
		s.mu.Unlock()
		select {
		case s.out <- event.GenericEvent{Object: ClusterObject(cd)}:
		case <-stop:
			return
		}
	}
}
