package delivery

import "github.com/apiaryhq/apiary/internal/naming"

// Sweep queues the removal of every file in the sink's path whose owner is
// of kind and, by alive, no longer exists, e.g. a workspace deleted while
// Apiary was not running; Flux then prunes its objects. alive is asked once
// per owner and should say true when it cannot tell. A sweep asked for
// before the clone opened runs once it opens. With sharding
// (GitOptions.MayRemove), only the files of units this process holds are
// swept: another shard's owners need not be in this process's cache. It
// returns how many files it queued for removal.
func (g *Git) Sweep(kind string, alive func(Owner) bool) int {
	g.mu.Lock()
	if g.repo == nil {
		g.sweeps = append(g.sweeps, sweepRequest{kind: kind, alive: alive})
		g.mu.Unlock()
		return 0
	}
	files := g.files()
	g.mu.Unlock()

	verdict := map[ownerKey]bool{}
	var orphans []string
	for path, data := range files {
		o, ok := fileOwner(data)
		if !ok || o.Kind != naming.LabelValue(kind) || !g.mayRemove(data) {
			continue
		}
		k := keyOf(o)
		live, seen := verdict[k]
		if !seen {
			live = alive(o)
			verdict[k] = live
		}
		if !live {
			orphans = append(orphans, path)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, path := range orphans {
		data := g.current(path)
		o, ok := fileOwner(data)
		if live, asked := verdict[keyOf(o)]; !ok || !asked || live || !g.mayRemove(data) {
			continue // changed meanwhile
		}
		g.queue(path, nil, keyOf(o), fileUnit(data))
		n++
	}
	if n > 0 {
		g.wake()
	}
	return n
}

// sweepRequest is a Sweep asked for before the clone opened.
type sweepRequest struct {
	kind  string
	alive func(Owner) bool
}

// mayRemove reports whether a sweep may remove committed file content:
// GitOptions.MayRemove on the file's shard unit, always when unset.
func (g *Git) mayRemove(data []byte) bool {
	return g.opts.MayRemove == nil || g.opts.MayRemove(fileUnit(data))
}
