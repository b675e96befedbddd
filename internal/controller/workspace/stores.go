package workspace

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/admission"
	"github.com/apiaryhq/apiary/internal/controller/workspace/childns"
	"github.com/apiaryhq/apiary/internal/controller/workspace/desired"
	"github.com/apiaryhq/apiary/internal/controller/workspace/routing"
	"github.com/apiaryhq/apiary/internal/keylock"
	"github.com/apiaryhq/apiary/internal/ownwrites"
	"github.com/apiaryhq/apiary/internal/prerequisite/install"
	"github.com/apiaryhq/apiary/internal/wake"
)

// stores are what the workspace controller keeps in memory between
// reconciles. Each is rebuilt from the cluster after a restart; forget
// drops a deleted workspace from all of them.
type stores struct {
	// gate serialises GPU admissions per cluster and remembers the ones
	// the cache does not hold yet.
	gate *gpuGate
	// desired renders workspaces and keeps each one's last rendering.
	desired *desired.Renderer
	// prerequisites installs the shared prerequisites of classes.
	prerequisites *install.Installer
	// routing publishes workspaces' routes and holds the ports of
	// regional clusters' pools they were given.
	routing *routing.Router
	// waits holds what each workspace waits for (waits.go).
	waits *wake.Waits
	// written holds the workspaces as this manager last wrote them, until
	// the cache has those writes.
	written *ownwrites.Memory[*workspacesv1.WorkspaceDeployment]
	// namespaces keeps the workspaces' namespaces on their child clusters
	// and remembers which it made sure of.
	namespaces *childns.Namespaces
	// left are the workspaces that left this shard's cache by a change of
	// their bucket label, not by deletion (shard.go).
	leftMu sync.Mutex
	left   map[types.NamespacedName]bool
	// stopChecks remembers when stopped workspaces were last checked in full.
	stopChecks *stopChecks
	// quotaPreemptions serialises the preemptions for room in each
	// TenantQuota, by name (preempt_quota.go).
	quotaPreemptions *keylock.Locks[string]
}

func newStores() stores {
	return stores{gate: newGPUGate(), waits: wake.New(), stopChecks: &stopChecks{}, quotaPreemptions: &keylock.Locks[string]{},
		written: ownwrites.New[*workspacesv1.WorkspaceDeployment](0)}
}

// forget drops a workspace, whose cluster is cd, from every store.
func (s *stores) forget(cd types.NamespacedName, obj *workspacesv1.WorkspaceDeployment) {
	key := client.ObjectKeyFromObject(obj)
	s.gate.forget(cd, obj.UID)
	s.desired.Forget(key)
	s.namespaces.Forget(obj.UID)
	s.written.Forget(obj.UID)
	s.waits.Forget(key)
	s.stopChecks.forget(obj.UID)
}

// gpuGate serialises GPU admissions per cluster and remembers, per
// cluster, the admissions written until the cache has the write
// (admission.Assumptions), so that a decision never misses one made a
// moment before. Everything else it needs is read anew for each decision.
type gpuGate struct {
	mu      sync.Mutex
	locks   keylock.Locks[types.NamespacedName]
	assumed map[types.NamespacedName]*admission.Assumptions[*workspacesv1.WorkspaceAdmission]
}

func newGPUGate() *gpuGate {
	return &gpuGate{
		assumed: map[types.NamespacedName]*admission.Assumptions[*workspacesv1.WorkspaceAdmission]{},
	}
}

func (g *gpuGate) lock(cd types.NamespacedName) func() { return g.locks.Lock(cd) }

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
