// Package ownwrites lets a reconciler read its own writes. An informer
// cache lags behind the API server: a reconcile that another event starts
// right after the previous one patched an object can read the object as it
// was before that patch, and then writes the same status again, or sees a
// phase change (and emits its event) a second time. A Memory keeps the
// object as the API server returned it from the write until the cache
// holds that version or a newer one, and hands it out instead of the
// cached one meanwhile, as Kueue "assumes" the workloads it admitted.
//
// Entries are dropped as soon as the cache is seen to have caught up, and
// otherwise after a time to live, so that a Memory holds only the objects
// written in the last few seconds, not a copy of every object.
package ownwrites

import (
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DefaultTTL bounds how long a write is remembered when no reconcile reads
// the object again: far longer than a healthy cache lags.
const DefaultTTL = 30 * time.Second

// Memory remembers the objects of one kind a reconciler wrote. It is safe
// for concurrent use. The zero value is not usable; see New.
type Memory[T client.Object] struct {
	ttl time.Duration
	now func() time.Time

	mu    sync.Mutex
	m     map[types.UID]entry[T]
	swept time.Time
}

type entry[T client.Object] struct {
	obj T
	at  time.Time
}

// New returns a Memory whose entries live at most ttl (DefaultTTL when
// zero).
func New[T client.Object](ttl time.Duration) *Memory[T] {
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	return &Memory[T]{ttl: ttl, now: time.Now, m: map[types.UID]entry[T]{}}
}

// Remember records obj as the API server returned it from a write; its
// resourceVersion is the write's. The Memory keeps obj: the caller must not
// change it afterwards.
func (m *Memory[T]) Remember(obj T) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	m.m[obj.GetUID()] = entry[T]{obj: obj, at: now}
	if now.Sub(m.swept) > m.ttl {
		for uid, e := range m.m {
			if now.Sub(e.at) > m.ttl {
				delete(m.m, uid)
			}
		}
		m.swept = now
	}
}

// Latest returns the remembered write of cached's object when the cache
// is older than that write (as a copy, for the caller to change), and
// cached otherwise, forgetting a write the cache caught up with.
func (m *Memory[T]) Latest(cached T) T {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.m[cached.GetUID()]
	switch {
	case !ok:
		return cached
	case Newer(e.obj.GetResourceVersion(), cached.GetResourceVersion()) && m.now().Sub(e.at) <= m.ttl:
		return e.obj.DeepCopyObject().(T)
	}
	delete(m.m, cached.GetUID())
	return cached
}

// Forget drops what was remembered of an object.
func (m *Memory[T]) Forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.m, uid)
}

// Len is the number of writes remembered.
func (m *Memory[T]) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.m)
}

// Newer reports whether resourceVersion a is strictly newer than b.
// resourceVersions are compared as integers, as the API server's quota
// admission does; ones that do not parse are never newer.
func Newer(a, b string) bool {
	x, errX := strconv.ParseUint(a, 10, 64)
	y, errY := strconv.ParseUint(b, 10, 64)
	return errX == nil && errY == nil && x > y
}
