package workspace

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	"github.com/fluxcd/pkg/runtime/jitter"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/admission"
	"github.com/apiaryhq/apiary/internal/controller/reconciler"
	"github.com/apiaryhq/apiary/internal/workspace/lifecycle"
)

// Preemption by stopping (docs/admission.md "Preemption"). A waiting
// workspace whose priority class says PreemptLowerPriority may stop
// running workspaces of a lower priority of its own tenant that have run
// their minimum time, the fewest whose going makes it fit
// (admission.Preempt). The preemptor writes the stop's intent onto each
// victim's status (stopReason Preempted, status.lifecycle.preemption),
// with the victim's resourceVersion, under the cluster's gate lock; each
// victim then stops itself as any stop goes (lifecycle, halt), keeping its
// volumes, and queues again on its own (afterPreemption). The preemptor
// waits, as Preempting, until the room is free.

// preempt looks for workspaces to stop for a request the gate made wait.
// preempting is set when the workspace waits for a preemption: then res is
// the step's result.
func (r *Reconciler) preempt(ctx context.Context, w *workspaceRun, req *admission.Request, read gateRead,
	d admission.Decision) (res stepResult, preempting bool, err error) {
	pc := w.priorityClass
	if pc == nil || pc.PreemptionPolicy != workspacesv1.PreemptLowerPriority {
		return proceed, false, nil
	}
	switch d.Reason {
	case admission.Insufficient, admission.Fragmented, admission.Queued:
	default:
		return proceed, false, nil
	}
	key := client.ObjectKeyFromObject(w.obj).String()
	now := r.now()
	allow, err := r.victimRule(ctx, w, now)
	if err != nil {
		return stopWith(0), false, err
	}
	p := admission.Preempt(read.snap, key, r.Policy, func(v *admission.Workspace) bool { return allow.allows(ctx, read.workspace[v.Key]) })
	if allow.err != nil {
		return stopWith(0), false, allow.err
	}
	if len(p.Victims) == 0 {
		if mine := preemptedBy(read, key); p.Freeing && len(mine) > 0 {
			return r.waitPreempting(w, req, mine), true, nil
		}
		if !allow.next.IsZero() {
			w.retry = sooner(w.retry, allow.next.Sub(now)+time.Second)
		}
		return proceed, false, nil
	}
	victims := make([]*workspacesv1.WorkspaceDeployment, len(p.Victims))
	for i, v := range p.Victims {
		victims[i] = read.workspace[v]
	}
	keys, err := r.preemptVictims(ctx, w, victims, now, "GPUs on cluster "+w.cdKey.Name)
	if err != nil {
		return stopWith(0), false, err
	}
	return r.waitPreempting(w, req, keys), true, nil
}

// preemptVictims writes the stop onto each victim (markPreempted), and
// logs and records, on the preemptor, which it stops for what room. It
// returns the victims' keys.
func (r *Reconciler) preemptVictims(ctx context.Context, w *workspaceRun, victims []*workspacesv1.WorkspaceDeployment,
	now time.Time, room string) ([]string, error) {
	keys := make([]string, 0, len(victims))
	for _, v := range victims {
		if v == nil {
			continue
		}
		if err := r.markPreempted(ctx, w, v, now); err != nil {
			return nil, err
		}
		keys = append(keys, client.ObjectKeyFromObject(v).String())
	}
	log.FromContext(ctx).Info("preempting lower-priority workspaces", "room", room, "victims", keys)
	if r.EventRecorder != nil {
		r.EventRecorder.Eventf(w.obj, nil, corev1.EventTypeNormal, workspacesv1.PreemptingReason, "Preempt",
			"stopping %d workspace(s) to make room (%s): %s", len(keys), room, reconciler.Enumerate(keys, ", ", 5))
	}
	return keys, nil
}

// waitPreempting makes the preemptor wait, as Preempting, for its victims'
// GPUs; their status changes wake it.
func (r *Reconciler) waitPreempting(w *workspaceRun, req *admission.Request, victims []string) stepResult {
	msg := fmt.Sprintf("Waiting for %d GPU(s) on cluster %q: stopping %d workspace(s) of a lower priority to make room: %s",
		req.Demand(), w.cdKey.Name, len(victims), reconciler.Enumerate(victims, ", ", 5))
	conditions.MarkFalse(w.obj, workspacesv1.GPUCapacityCondition, workspacesv1.PreemptingReason, "%s", msg)
	conditions.Delete(w.obj, workspacesv1.QuotaReservedCondition)
	waiting(w, msg)
	w.waitFor(clusterTopic(waitCapacity, w.cdKey))
	return stopWith(jitter.JitteredIntervalDuration(waitingResync))
}

// preemptedBy are the workspaces of the cluster still stopping for a
// preemption by key.
func preemptedBy(read gateRead, key string) []string {
	var out []string
	for k, s := range read.workspace {
		if stoppingFor(s, key) {
			out = append(out, k)
		}
	}
	slices.Sort(out) // one message, whatever the map's order: no status write for nothing
	return out
}

// stoppingFor reports whether a workspace is still stopping, and holding
// what it gives back, for a preemption by the workspace of key.
func stoppingFor(s *workspacesv1.WorkspaceDeployment, key string) bool {
	l := s.Status.Lifecycle
	return leaving(s) && l.Preemption != nil && l.Preemption.By == key && l.StoppedAt == nil
}

// victimRule says which workspaces a preemptor may stop: running
// (delivered, not stopping, not asked to stop, not being deleted, admitted),
// of a lower priority, of its tenant (sameTenant), and past the minimum
// runtime of their priority class, counted from their admission. next is
// when the first workspace held back by its minimum runtime passes it; err
// the first error reading a tenant or a priority class.
type victimRule struct {
	r          *Reconciler
	preemptor  *workspacesv1.WorkspaceDeployment
	tenant     tenant
	now        time.Time
	minRuntime map[string]time.Duration
	next       time.Time
	err        error
}

func (r *Reconciler) victimRule(ctx context.Context, w *workspaceRun, now time.Time) (*victimRule, error) {
	t, err := r.tenantOf(ctx, w.obj.Namespace)
	if err != nil {
		return nil, err
	}
	return &victimRule{r: r, preemptor: w.obj, tenant: t, now: now, minRuntime: map[string]time.Duration{}}, nil
}

// allows reports whether s may be stopped for the preemptor.
func (v *victimRule) allows(ctx context.Context, s *workspacesv1.WorkspaceDeployment) bool {
	if !v.running(s) || lifecycle.Priority(s) >= lifecycle.Priority(v.preemptor) {
		return false
	}
	if s.Namespace != v.preemptor.Namespace {
		t, err := v.r.tenantOf(ctx, s.Namespace)
		if err != nil {
			v.err = cmp.Or(v.err, err)
			return false
		}
		if !sameTenant(v.tenant, t) {
			return false
		}
	}
	return v.ranLongEnough(ctx, s)
}

// reclaims reports whether a borrower s may be stopped to give its loan
// back to the preemptor's quota: whatever its tenant and priority, once it
// ran its minimum time (docs/admission.md, "Cohorts").
func (v *victimRule) reclaims(ctx context.Context, s *workspacesv1.WorkspaceDeployment) bool {
	return v.running(s) && v.ranLongEnough(ctx, s)
}

// running reports whether s runs, and is not the preemptor: delivered, not
// stopping, not asked to stop, not being deleted, admitted.
func (v *victimRule) running(s *workspacesv1.WorkspaceDeployment) bool {
	return s != nil && s.UID != v.preemptor.UID && delivered(s) && s.DeletionTimestamp.IsZero() &&
		(s.Spec.Lifecycle == nil || !s.Spec.Lifecycle.Stopped) && s.Status.Admission != nil
}

// ranLongEnough reports whether s has run the minimum runtime of its
// priority class since its admission; next notes when it will have.
func (v *victimRule) ranLongEnough(ctx context.Context, s *workspacesv1.WorkspaceDeployment) bool {
	name := ""
	if s.Status.Priority != nil {
		name = s.Status.Priority.ClassName
	}
	m, ok := v.minRuntime[name]
	if !ok {
		var err error
		if m, err = v.r.minRuntimeOf(ctx, name); err != nil {
			v.err = cmp.Or(v.err, err)
			return false
		}
		v.minRuntime[name] = m
	}
	if until := s.Status.Admission.AdmittedAt.Add(m); v.now.Before(until) {
		if v.next.IsZero() || until.Before(v.next) {
			v.next = until
		}
		return false
	}
	return true
}

// tenant is the TenantQuotas that select a namespace, by name.
type tenant struct {
	namespace string
	quotas    map[string]bool
}

// tenantOf is the tenant of a namespace.
func (r *Reconciler) tenantOf(ctx context.Context, namespace string) (tenant, error) {
	qs, err := r.quotasOf(ctx, namespace)
	if err != nil {
		return tenant{}, fmt.Errorf("reading the tenant of namespace %s: %w", namespace, err)
	}
	t := tenant{namespace: namespace, quotas: map[string]bool{}}
	for _, q := range qs {
		t.quotas[q.Name] = true
	}
	return t, nil
}

// sameTenant reports whether two namespaces are one tenant for preemption:
// the same namespace, or namespaces that exactly the same TenantQuotas (one
// or more) select. A quota over every namespace and one per team make each
// team its own tenant.
func sameTenant(a, b tenant) bool {
	if a.namespace == b.namespace {
		return true
	}
	if len(a.quotas) == 0 || len(a.quotas) != len(b.quotas) {
		return false
	}
	for q := range a.quotas {
		if !b.quotas[q] {
			return false
		}
	}
	return true
}

// minRuntimeOf is the minimum runtime of a priority class; none without
// one, or when the class is gone.
func (r *Reconciler) minRuntimeOf(ctx context.Context, name string) (time.Duration, error) {
	if name == "" {
		return 0, nil
	}
	pc := &workspacesv1.WorkspacePriorityClass{}
	if err := r.Get(ctx, client.ObjectKey{Name: name}, pc); err != nil {
		if apierrors.IsNotFound(err) {
			return 0, nil
		}
		return 0, fmt.Errorf("reading WorkspacePriorityClass %s: %w", name, err)
	}
	if pc.MinRuntime == nil || pc.MinRuntime.Duration < 0 {
		return 0, nil
	}
	return pc.MinRuntime.Duration, nil
}

// markPreempted writes the stop's intent onto a victim's status, as its own
// beginStop would, with the version read: a victim that changed since is
// looked at again on the next try. A Warning event names the preemptor.
func (r *Reconciler) markPreempted(ctx context.Context, w *workspaceRun, victim *workspacesv1.WorkspaceDeployment, now time.Time) error {
	key := client.ObjectKeyFromObject(w.obj).String()
	at := metav1.NewTime(now.Truncate(time.Second))
	queueAs := at
	if r.PreemptionRequeue == workspacesv1.RequeueCreation {
		queueAs = metav1.NewTime(lifecycle.QueuedAt(victim))
	}
	patched := victim.DeepCopy()
	l := lifecycleStatus(patched)
	l.StopRequestedAt, l.StoppedAt, l.StopReason = &at, nil, workspacesv1.StopPreempted
	l.Preemption = &workspacesv1.WorkspacePreemption{By: key, ByPriority: lifecycle.Priority(w.obj), At: at, QueueAs: &queueAs}
	patched.Status.Phase = workspacesv1.PhaseStopped
	patched.Status.Message = fmt.Sprintf("preempted by workspace %s (priority %d): stopping, keeping its namespace and volumes", key, lifecycle.Priority(w.obj))
	err := r.Status().Patch(ctx, patched, client.MergeFromWithOptions(victim, client.MergeFromWithOptimisticLock{}))
	if err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return fmt.Errorf("preempting workspace %s: it changed; deciding again: %w", client.ObjectKeyFromObject(victim), err)
		}
		return fmt.Errorf("preempting workspace %s: %w", client.ObjectKeyFromObject(victim), err)
	}
	r.written.Remember(patched.DeepCopy())
	if r.EventRecorder != nil {
		r.EventRecorder.Eventf(patched, w.obj, corev1.EventTypeWarning, workspacesv1.PreemptedReason, "Preempt",
			"preempted by workspace %s of priority %d: the workspace stops, keeping its namespace and volumes, and queues again "+
				"once stopped, unless its class keeps it stopped (afterPreemption: Stay)", key, lifecycle.Priority(w.obj))
	}
	return nil
}
