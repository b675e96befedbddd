package admission

import (
	"sync"

	"github.com/apiaryhq/apiary/internal/ownwrites"
)

// Assumptions remember what a process wrote to its objects until its
// cache holds that write or a newer version of the object (Kueue's
// "assume"): a decision made right after an admission then never misses
// it, whatever the cache says yet, and whatever the status says once the
// cache caught up supersedes it. A restart starts with none: the cache has
// synced by the time anything is decided.
type Assumptions[T any] struct {
	mu sync.Mutex
	m  map[string]assumed[T]
}

type assumed[T any] struct {
	value           T
	resourceVersion string
}

// Assume remembers a value written to an object, with the resourceVersion
// of the write.
func (a *Assumptions[T]) Assume(uid string, value T, resourceVersion string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = map[string]assumed[T]{}
	}
	a.m[uid] = assumed[T]{value: value, resourceVersion: resourceVersion}
}

// Forget drops what was remembered of an object.
func (a *Assumptions[T]) Forget(uid string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.m, uid)
}

// Current returns what to believe of an object the cache holds at a
// resourceVersion with a value: the value written, while the cache is
// older than the write; the cached value otherwise (forgetting the write).
func (a *Assumptions[T]) Current(uid, cachedVersion string, cached T) T {
	a.mu.Lock()
	defer a.mu.Unlock()
	w, ok := a.m[uid]
	if !ok {
		return cached
	}
	if CaughtUp(cachedVersion, w.resourceVersion) {
		delete(a.m, uid)
		return cached
	}
	return w.value
}

// Len is the number of writes the cache has not caught up with yet.
func (a *Assumptions[T]) Len() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.m)
}

// CaughtUp reports whether an object at one resourceVersion is at least as
// new as another: the same version, or a newer one as ownwrites.Newer
// compares them (as integers, as the API server's quota admission does).
func CaughtUp(current, written string) bool {
	return current == written || ownwrites.Newer(current, written)
}
