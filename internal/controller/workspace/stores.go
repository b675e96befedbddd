package workspace

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/access"
	"github.com/apiaryhq/apiary/internal/admission"
	"github.com/apiaryhq/apiary/internal/ownwrites"
	"github.com/apiaryhq/apiary/internal/wake"
	"github.com/apiaryhq/apiary/internal/workspace/values"
)

// stores are what the workspace controller keeps in memory between
// reconciles. Each is rebuilt from the cluster after a restart; forget
// drops a deleted workspace from all of them.
type stores struct {
	// gate serialises GPU admissions per cluster and remembers the ones
	// the cache does not hold yet.
	gate *gpuGate
	// rendered keeps each workspace's last rendering.
	rendered renderCache
	// ports hands out the TCP ports of regional clusters' pools.
	ports *access.Ledger
	// waits holds what each workspace waits for (waits.go).
	waits *wake.Waits
	// written holds the workspaces as this manager last wrote them, until
	// the cache has those writes.
	written *ownwrites.Memory[*workspacesv1.WorkspaceDeployment]
	// enrolled remembers the labels last given to each workspace's child
	// namespace (by UID), so that a namespace is read again only when they
	// change: at start, and when the mesh configuration changed.
	enrolled sync.Map
}

func newStores() stores {
	return stores{gate: newGPUGate(), ports: access.NewLedger(), waits: wake.New(),
		written: ownwrites.New[*workspacesv1.WorkspaceDeployment](0)}
}

// forget drops a workspace, whose cluster is cd, from every store.
func (s *stores) forget(cd types.NamespacedName, obj *workspacesv1.WorkspaceDeployment) {
	key := client.ObjectKeyFromObject(obj)
	s.gate.forget(cd, obj.UID)
	s.rendered.forget(key)
	s.ports.Release(key)
	s.enrolled.Delete(obj.UID)
	s.written.Forget(obj.UID)
	s.waits.Forget(key)
}

// gpuGate serialises GPU admissions per cluster and remembers, per
// cluster, the admissions written until the cache has the write
// (admission.Assumptions), so that a decision never misses one made a
// moment before. Everything else it needs is read anew for each decision.
type gpuGate struct {
	mu      sync.Mutex
	locks   map[types.NamespacedName]*sync.Mutex
	assumed map[types.NamespacedName]*admission.Assumptions[*workspacesv1.WorkspaceAdmission]
}

func newGPUGate() *gpuGate {
	return &gpuGate{
		locks:   map[types.NamespacedName]*sync.Mutex{},
		assumed: map[types.NamespacedName]*admission.Assumptions[*workspacesv1.WorkspaceAdmission]{},
	}
}

func (g *gpuGate) lock(cd types.NamespacedName) func() {
	g.mu.Lock()
	l, ok := g.locks[cd]
	if !ok {
		l = &sync.Mutex{}
		g.locks[cd] = l
	}
	g.mu.Unlock()
	l.Lock()
	return l.Unlock
}

func (g *gpuGate) assumptions(cd types.NamespacedName) *admission.Assumptions[*workspacesv1.WorkspaceAdmission] {
	g.mu.Lock()
	defer g.mu.Unlock()
	a, ok := g.assumed[cd]
	if !ok {
		a = &admission.Assumptions[*workspacesv1.WorkspaceAdmission]{}
		g.assumed[cd] = a
	}
	return a
}

// assume remembers an admission written to a workspace's status at a resourceVersion.
func (g *gpuGate) assume(cd types.NamespacedName, uid types.UID, a *workspacesv1.WorkspaceAdmission, resourceVersion string) {
	g.assumptions(cd).Assume(string(uid), a.DeepCopy(), resourceVersion)
}

func (g *gpuGate) forget(cd types.NamespacedName, uid types.UID) {
	g.assumptions(cd).Forget(string(uid))
}

// admissionOf returns the admission of a workspace of the cluster as the
// gate must see it.
func (g *gpuGate) admissionOf(cd types.NamespacedName, s *workspacesv1.WorkspaceDeployment) *workspacesv1.WorkspaceAdmission {
	return g.assumptions(cd).Current(string(s.UID), s.ResourceVersion, s.Status.Admission)
}

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
