package prerequisite

import (
	"sync"

	"github.com/apiaryhq/apiary/internal/keylock"
)

// ID names the shared install of one prerequisite on one cluster: the
// ClusterDeployment's namespace and name, and the prerequisite's Key.
type ID struct {
	Namespace, Cluster, Key string
}

// Writes serialises one process's decisions about each install (Lock) and
// remembers the installs it delivered until its cache shows them (Record,
// Current), so that two workers, or two reconciles in a row, never decide
// from a cache that misses what was just written: a prerequisite created
// twice under two names, or an install upgraded by one class and then
// "upgraded" back by an older class's reconcile that read the cache too
// early. In Git mode the memory also covers the time until Flux applies the
// commit. A restart starts with none: the cache has synced by the time
// anything is decided. The zero value is ready to use.
type Writes struct {
	locks    keylock.Locks[ID]
	mu       sync.Mutex
	written  map[ID]Candidate
	removing map[serviceSet]bool
}

type serviceSet struct{ namespace, name string }

// Lock takes the lock of one install and returns its unlock.
func (w *Writes) Lock(id ID) (unlock func()) { return w.locks.Lock(id) }

// Record remembers an install delivered for id.
func (w *Writes) Record(id ID, wr Candidate) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.written == nil {
		w.written = map[ID]Candidate{}
	}
	w.written[id] = wr
}

// Current returns the install of id to believe, given the one the cache
// holds (nil for none), and whether it is pending, that is delivered but
// not in the cache yet (its state cannot be read). The cache wins once it
// shows what was written, or a newer version, or another ServiceSet; what
// was written wins while the cache shows nothing or an older template.
func (w *Writes) Current(id ID, cached *Candidate) (cur *Candidate, pending bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	wr, ok := w.written[id]
	switch {
	case !ok:
		return cached, false
	case cached == nil:
		return &wr, true
	case cached.ServiceSet != wr.ServiceSet || cached.Template.Name == wr.Template.Name:
		delete(w.written, id)
		return cached, false
	}
	if Decide(&cached.Template, wr.Template, "").Action == Upgrade {
		out := *cached
		out.Template = wr.Template
		return &out, true
	}
	delete(w.written, id)
	return cached, false
}

// MarkRemoving remembers that the ServiceSet namespace/name is being
// removed, before its deletion shows (in Git mode, until Flux prunes it), so
// that no workspace starts to rely on it meanwhile.
func (w *Writes) MarkRemoving(namespace, name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.removing == nil {
		w.removing = map[serviceSet]bool{}
	}
	w.removing[serviceSet{namespace, name}] = true
}

// Removing reports whether the ServiceSet namespace/name is being removed.
func (w *Writes) Removing(namespace, name string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.removing[serviceSet{namespace, name}]
}

// Forget drops what was remembered of the ServiceSet namespace/name, once
// it is deleted.
func (w *Writes) Forget(namespace, name string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.removing, serviceSet{namespace, name})
	for id, wr := range w.written {
		if id.Namespace == namespace && wr.ServiceSet == name {
			delete(w.written, id)
		}
	}
}

// Len is the number of installs remembered.
func (w *Writes) Len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.written)
}
