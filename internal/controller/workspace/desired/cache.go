package desired

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/apiaryhq/apiary/internal/workspace/values"
)

// renderCache keeps each workspace's last rendering, keyed by a fingerprint
// of its inputs, so a steady-state reconcile neither re-reads values Secrets
// nor re-renders. It holds the objects encoded (JSON), about a quarter of
// the memory of the decoded maps, and decodes them afresh for every use.
type renderCache struct {
	mu      sync.Mutex
	entries map[types.NamespacedName]*renderedSet
}

// renderedSet is a desiredSet as the render cache keeps it.
type renderedSet struct {
	fingerprint string
	digest      string
	objects     [][]byte
	injected    []values.Overwrite
}

func (c *renderCache) get(key types.NamespacedName, fingerprint string) *renderedSet {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.entries[key]; e != nil && e.fingerprint == fingerprint {
		return e
	}
	return nil
}

func (c *renderCache) put(key types.NamespacedName, e *renderedSet) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries == nil {
		c.entries = map[types.NamespacedName]*renderedSet{}
	}
	c.entries[key] = e
}

func (c *renderCache) forget(key types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, key)
}
