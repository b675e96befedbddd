// Package keylock serialises work per key: one mutex per key, made on
// first use and kept, as the keys (clusters, shared installs) are few and
// live as long as the process.
package keylock

import "sync"

// Locks holds a mutex per key. The zero value is ready to use.
type Locks[K comparable] struct {
	mu sync.Mutex
	m  map[K]*sync.Mutex
}

// Lock takes the lock of k and returns its unlock.
func (l *Locks[K]) Lock(k K) (unlock func()) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[K]*sync.Mutex{}
	}
	m, ok := l.m[k]
	if !ok {
		m = &sync.Mutex{}
		l.m[k] = m
	}
	l.mu.Unlock()
	m.Lock()
	return m.Unlock
}
