package controllers

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/childcluster"
	"github.com/apiaryhq/apiary/internal/gpu"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
	"github.com/apiaryhq/apiary/internal/workspace/values"
)

// waitingResync bounds how long a Waiting workspace goes without a look, on
// top of the watches that wake it (node, pod and workspace changes).
const waitingResync = time.Minute

// admission is the GPU demand of a workspace that passed the gate.
type admission struct {
	demand   int64
	selector string
}

// gpuGate serialises GPU admissions per cluster and remembers what it
// admitted: capacity is reserved for admitted workspaces until their pods are
// bound and counted by the scheduler's own bookkeeping, so two workspaces
// never take the same GPUs.
type gpuGate struct {
	mu       sync.Mutex
	locks    map[types.NamespacedName]*sync.Mutex
	admitted map[types.NamespacedName]map[types.NamespacedName]admission
}

func newGPUGate() *gpuGate {
	return &gpuGate{
		locks:    map[types.NamespacedName]*sync.Mutex{},
		admitted: map[types.NamespacedName]map[types.NamespacedName]admission{},
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

func (g *gpuGate) admit(cd, ws types.NamespacedName, a admission) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.admitted[cd] == nil {
		g.admitted[cd] = map[types.NamespacedName]admission{}
	}
	g.admitted[cd][ws] = a
}

func (g *gpuGate) forget(cd, ws types.NamespacedName) {
	if g == nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.admitted[cd], ws)
}

// snapshot returns the admissions of a cluster.
func (g *gpuGate) snapshot(cd types.NamespacedName) map[types.NamespacedName]admission {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[types.NamespacedName]admission, len(g.admitted[cd]))
	for k, v := range g.admitted[cd] {
		out[k] = v
	}
	return out
}

// admitted reports whether the workspace's current generation passed the gate.
func admitted(obj *workspacesv1.WorkspaceDeployment) bool {
	c := conditions.Get(obj, workspacesv1.GPUCapacityCondition)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == obj.Generation
}

// admitGPUs is the live GPU gate: the workspace proceeds only when the
// matching nodes of its cluster have its GPUs free, after what running pods
// request and what admitted workspaces reserve; the oldest waiting workspace
// goes first. No matching GPU offering fails the workspace.
func (r *WorkspaceDeploymentReconciler) admitGPUs(ctx context.Context, w *workspaceRun) (stepResult, error) {
	obj := w.obj
	self := client.ObjectKeyFromObject(obj)
	if w.demand <= 0 {
		conditions.Delete(obj, workspacesv1.GPUCapacityCondition)
		r.gate.forget(w.cdKey, self)
		return proceed, nil
	}
	if admitted(obj) {
		if prev := obj.Status.ResolvedResources; prev != nil && prev.PerReplica != nil && prev.PerReplica.GPUVendor != nil {
			r.stampVendor(w, string(*prev.PerReplica.GPUVendor))
		}
		r.gate.admit(w.cdKey, self, admission{demand: w.demand, selector: gpu.SelectorKey(w.selector)})
		return proceed, nil
	}
	cc, err := r.Children.Watch(ctx, w.cdKey, workspaceWatchOwner(obj), childcluster.WatchOptions{Pods: true})
	if err != nil {
		conditions.MarkUnknown(obj, workspacesv1.GPUCapacityCondition, workspacesv1.ChildUnreachableReason, "%s", err)
		pending(obj, "waiting for access to the child cluster: %s", err)
		return stopWith(30 * time.Second), nil
	}
	nodes, err := cc.ListNodes(ctx)
	if err != nil {
		return stopWith(0), fmt.Errorf("listing nodes of %s: %w", w.cdKey, err)
	}
	pods, err := cc.ListPods(ctx)
	if err != nil {
		return stopWith(0), fmt.Errorf("listing pods of %s: %w", w.cdKey, err)
	}

	unlock := r.gate.lock(w.cdKey)
	defer unlock()
	capacity, found := gpu.Availability(nodes, pods, w.selector)
	if !found {
		msg := fmt.Sprintf("No GPU matching %s is available on cluster %q; choose a different cluster or GPU", describeSelector(w.selector), w.cdKey.Name)
		conditions.MarkFalse(obj, workspacesv1.GPUCapacityCondition, workspacesv1.GPUOfferingUnavailableReason, "%s", msg)
		r.fail(ctx, obj, workspacesv1.GPUOfferingUnavailableReason, msg)
		r.Children.Release(w.cdKey, workspaceWatchOwner(obj))
		return stopWith(0), nil
	}
	selKey := gpu.SelectorKey(w.selector)
	siblings, err := r.clusterWorkspaces(ctx, w.cdKey)
	if err != nil {
		return stopWith(0), err
	}
	reserved := r.reserved(w.cdKey, self, selKey, siblings, pods, capacity.ResourceName)
	free := max(capacity.Free-reserved, 0)
	ahead := olderWaiting(obj, siblings, selKey)
	r.stampVendor(w, capacity.Vendor)
	if free < w.demand || len(ahead) > 0 {
		msg := fmt.Sprintf("Waiting for %d GPU(s) matching %s on cluster %q; %d currently free", w.demand, describeSelector(w.selector), w.cdKey.Name, free)
		if free >= w.demand {
			msg = fmt.Sprintf("Waiting behind older workspace(s) requesting GPUs matching %s on cluster %q: %s",
				describeSelector(w.selector), w.cdKey.Name, strings.Join(ahead, ", "))
		}
		conditions.MarkFalse(obj, workspacesv1.GPUCapacityCondition, workspacesv1.WaitingForGPUCapacityReason, "%s", msg)
		obj.Status.Phase, obj.Status.Message = workspacesv1.PhaseWaiting, msg
		return stopWith(jitter(waitingResync)), nil
	}
	r.gate.admit(w.cdKey, self, admission{demand: w.demand, selector: selKey})
	conditions.MarkTrue(obj, workspacesv1.GPUCapacityCondition, workspacesv1.ResourcesAvailableReason,
		"%d of %d free %s GPUs on %d nodes admitted", w.demand, free, capacity.ResourceName, capacity.Nodes)
	r.Children.Release(w.cdKey, workspaceWatchOwner(obj))
	return proceed, nil
}

// stampVendor records the vendor the gate found when the workspace left it unset.
func (r *WorkspaceDeploymentReconciler) stampVendor(w *workspaceRun, vendor string) {
	pr := w.resolved.PerReplica
	if pr == nil || pr.GPUVendor != nil || vendor == "" {
		return
	}
	v := workspacesv1.GPUVendor(vendor)
	pr.GPUVendor = &v
}

// clusterWorkspaces lists the workspaces targeting a cluster, from the cache.
func (r *WorkspaceDeploymentReconciler) clusterWorkspaces(ctx context.Context, cd types.NamespacedName) ([]workspacesv1.WorkspaceDeployment, error) {
	list := &workspacesv1.WorkspaceDeploymentList{}
	if err := r.List(ctx, list, client.MatchingFields{workspaceClusterIndex: cd.String()}); err != nil {
		return nil, fmt.Errorf("listing workspaces of cluster %s: %w", cd, err)
	}
	return list.Items, nil
}

// reserved is the demand of the other admitted workspaces with the same
// selector that their bound pods do not account for yet.
func (r *WorkspaceDeploymentReconciler) reserved(cd, self types.NamespacedName, selKey string, siblings []workspacesv1.WorkspaceDeployment,
	pods []corev1.Pod, resource string) int64 {
	live := map[types.NamespacedName]bool{}
	for i := range siblings {
		s := &siblings[i]
		key := client.ObjectKeyFromObject(s)
		live[key] = true
		// Admissions made before a restart are read back from the status.
		if admitted(s) && s.DeletionTimestamp.IsZero() && s.Status.ResolvedResources != nil {
			res := *s.Status.ResolvedResources
			if d := plan.Demand(res); d > 0 {
				r.gate.admit(cd, key, admission{demand: d, selector: gpu.SelectorKey(plan.GPUSelector(res))})
			}
		}
	}
	var total int64
	for key, a := range r.gate.snapshot(cd) {
		if !live[key] {
			r.gate.forget(cd, key)
			continue
		}
		if key == self || a.selector != selKey {
			continue
		}
		total += max(a.demand-podRequests(pods, childNamespace(key.Name), resource), 0)
	}
	return total
}

// olderWaiting lists the Waiting workspaces of the same cluster and selector
// that came first (creation time, then UID).
func olderWaiting(obj *workspacesv1.WorkspaceDeployment, siblings []workspacesv1.WorkspaceDeployment, selKey string) []string {
	var out []string
	for i := range siblings {
		s := &siblings[i]
		if s.UID == obj.UID || s.Status.Phase != workspacesv1.PhaseWaiting || !s.DeletionTimestamp.IsZero() {
			continue
		}
		res := values.MergeResources(nil, s.Spec.Resources)
		if s.Status.ResolvedResources != nil {
			res = *s.Status.ResolvedResources
		}
		if gpu.SelectorKey(plan.GPUSelector(res)) != selKey {
			continue
		}
		older := s.CreationTimestamp.Before(&obj.CreationTimestamp) ||
			(s.CreationTimestamp.Equal(&obj.CreationTimestamp) && s.UID < obj.UID)
		if older {
			out = append(out, s.Namespace+"/"+s.Name)
		}
	}
	sort.Strings(out)
	return out
}

// podRequests sums what the live pods of a namespace request of a resource.
func podRequests(pods []corev1.Pod, namespace, resource string) int64 {
	var total int64
	for _, p := range pods {
		if p.Namespace != namespace || p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		total += gpu.PodRequest(&p, corev1.ResourceName(resource))
	}
	return total
}

func describeSelector(sel map[string]string) string {
	if len(sel) == 0 {
		return "any GPU"
	}
	if m, ok := sel[gpu.ModelLabel]; ok && len(sel) == 1 {
		return fmt.Sprintf("model %q", m)
	}
	return fmt.Sprintf("selector %v", sel)
}
