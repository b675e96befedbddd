package workspace_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/controllertest"
	"github.com/apiaryhq/apiary/test/standin"
)

// preemptingClass creates a WorkspacePriorityClass the test's namespace
// may name, with a preemption policy and a minimum runtime.
func preemptingClass(t *testing.T, ns, name string, value int32, policy workspacesv1.PreemptionPolicy, minRuntime time.Duration) string {
	t.Helper()
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}}
	return priorityClass(t, name+"-"+ns, value, sel, func(pc *workspacesv1.WorkspacePriorityClass) {
		pc.PreemptionPolicy = policy
		if minRuntime > 0 {
			pc.MinRuntime = &metav1.Duration{Duration: minRuntime}
		}
	}).Name
}

// warningNotes are the notes of the Warning events of a workspace, of a
// reason or, with "", of any.
func warningNotes(g Gomega, ns, name, reason string) []string {
	list := &eventsv1.EventList{}
	g.Expect(controllertest.Env.Client.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Name == name && e.Type == corev1.EventTypeWarning && (reason == "" || e.Reason == reason) {
			out = append(out, e.Note)
		}
	}
	return out
}

// TestPreemptionStopsALowerPriorityAndItComesBack: one GPU, held by a
// workspace without a priority. A workspace of a higher priority whose
// class does not preempt waits (opt-in); one whose class preempts stops the
// holder — Stopped, reason Preempted, its preemptor named in its status and
// a Warning event, its volume and namespace kept — and runs. The preempted
// workspace queues again on its own, behind the higher priorities, and
// runs on the same volume once they are gone.
func TestPreemptionStopsALowerPriorityAndItComesBack(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "preempt")
	controllertest.ReadyCluster(t, ns, "c1")
	class := controllertest.HubClass(t, ns, "hub", nil)
	model := "A10-" + ns
	g.Expect(standin.AddGPUNode(ctx, controllertest.ChildClient, ns+"-a10", map[string]string{"exalsius.ai/gpu-model": model}, "nvidia.com/gpu", 1)).To(Succeed())
	calmClass := preemptingClass(t, ns, "calm", 50, workspacesv1.PreemptNever, 0)
	urgentClass := preemptingClass(t, ns, "urgent", 100, workspacesv1.PreemptLowerPriority, 0)

	keyLow := controllertest.CreateWorkspace(t, gpuWorkspace(ns, uniq(ns, "low"), class.Name, "c1", model, 1))
	running := controllertest.EventuallyRunning(t, keyLow)
	var before controllertest.HubRelease
	g.Eventually(func(g Gomega) { before = controllertest.ReadHubRelease(g, running) }, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())

	calm := gpuWorkspace(ns, uniq(ns, "calm"), class.Name, "c1", model, 1)
	calm.Spec.PriorityClassName = calmClass
	keyCalm := controllertest.CreateWorkspace(t, calm)
	controllertest.EventuallyPhase(t, keyCalm, workspacesv1.PhaseWaiting)
	g.Consistently(func(g Gomega) {
		g.Expect(controllertest.GetWorkspace(g, keyLow).Status.Phase).To(Equal(workspacesv1.PhaseRunning))
	}, 2*time.Second, 200*time.Millisecond).Should(Succeed(), "a priority class that does not preempt stops no one")

	urgent := gpuWorkspace(ns, uniq(ns, "urgent"), class.Name, "c1", model, 1)
	urgent.Spec.PriorityClassName = urgentClass
	keyUrgent := controllertest.CreateWorkspace(t, urgent)
	controllertest.EventuallyRunning(t, keyUrgent)

	var stopped *workspacesv1.WorkspaceDeployment
	g.Eventually(func(g Gomega) {
		stopped = controllertest.GetWorkspace(g, keyLow)
		l := stopped.Status.Lifecycle
		g.Expect(l).NotTo(BeNil())
		g.Expect(l.StopReason).To(Equal(workspacesv1.StopPreempted))
		g.Expect(l.Preemption).NotTo(BeNil())
		g.Expect(l.Preemption.By).To(Equal(keyUrgent.String()))
		g.Expect(l.Preemption.ByPriority).To(BeEquivalentTo(100))
		g.Expect(stopped.Status.Admission).To(BeNil(), "its GPU is given back")
		controllertest.ExpectScaledAway(g, stopped)
		rel := controllertest.ReadHubRelease(g, stopped)
		g.Expect(rel.PVC.UID).To(Equal(before.PVC.UID), "the volume claim is kept")
		g.Expect(rel.Namespace.UID).To(Equal(before.Namespace.UID), "the namespace is kept")
		g.Expect(warningNotes(g, ns, keyLow.Name, workspacesv1.PreemptedReason)).To(ContainElement(ContainSubstring(keyUrgent.String())))
		g.Expect(eventReasons(g, ns, keyUrgent.Name)).To(ContainElement(workspacesv1.PreemptingReason))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
	g.Expect(controllertest.GetWorkspace(g, keyCalm).Status.Phase).To(Equal(workspacesv1.PhaseWaiting), "the preemptor, not an older waiter of a lower priority, took the room")

	// It queues again on its own: the user did not ask it to stop.
	g.Eventually(func(g Gomega) {
		w := controllertest.GetWorkspace(g, keyLow)
		g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseWaiting))
		g.Expect(w.Spec.Lifecycle).To(BeNil(), "the user's stop is not set")
		g.Expect(w.Status.Lifecycle.QueuedAt).NotTo(BeNil())
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())

	controllertest.DeleteWorkspace(t, keyUrgent)
	controllertest.EventuallyRunning(t, keyCalm) // the higher priority first
	g.Expect(controllertest.GetWorkspace(g, keyLow).Status.Phase).To(Equal(workspacesv1.PhaseWaiting))
	controllertest.DeleteWorkspace(t, keyCalm)
	again := controllertest.EventuallyRunning(t, keyLow)
	g.Expect(again.Status.Lifecycle.StopReason).To(BeEmpty())
	g.Eventually(func(g Gomega) {
		rel := controllertest.ReadHubRelease(g, again)
		g.Expect(*rel.Deployment.Spec.Replicas).To(BeEquivalentTo(1))
		g.Expect(rel.PVC.UID).To(Equal(before.PVC.UID), "the same volume claim")
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
}

// TestPreemptionWaitsForTheMinimumRuntimeAndStayKeepsItStopped: the
// holder's priority class gives it a minimum runtime; a preemptor waits
// for it (not Preempting), then stops it. Its class says Stay: it stays
// stopped, spec.lifecycle.stopped set, after the preemptor is gone, until
// its user starts it.
func TestPreemptionWaitsForTheMinimumRuntimeAndStayKeepsItStopped(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "preempt-stay")
	controllertest.ReadyCluster(t, ns, "c1")
	class := controllertest.HubClass(t, ns, "hub", func(c *workspacesv1.WorkspaceClass) {
		c.Spec.Lifecycle = &workspacesv1.ClassLifecycle{AfterPreemption: workspacesv1.PreemptedStay}
	})
	model := "A16-" + ns
	g.Expect(standin.AddGPUNode(ctx, controllertest.ChildClient, ns+"-a16", map[string]string{"exalsius.ai/gpu-model": model}, "nvidia.com/gpu", 1)).To(Succeed())
	guarded := preemptingClass(t, ns, "guarded", 0, workspacesv1.PreemptNever, 6*time.Second)
	urgentClass := preemptingClass(t, ns, "urgent", 100, workspacesv1.PreemptLowerPriority, 0)

	low := gpuWorkspace(ns, uniq(ns, "held"), class.Name, "c1", model, 1)
	low.Spec.PriorityClassName = guarded
	keyLow := controllertest.CreateWorkspace(t, low)
	running := controllertest.EventuallyRunning(t, keyLow)
	urgent := gpuWorkspace(ns, uniq(ns, "urgent"), class.Name, "c1", model, 1)
	urgent.Spec.PriorityClassName = urgentClass
	keyUrgent := controllertest.CreateWorkspace(t, urgent)
	w := controllertest.EventuallyPhase(t, keyUrgent, workspacesv1.PhaseWaiting)
	admittedAt := running.Status.Admission.AdmittedAt.Time
	if time.Since(admittedAt) < 5*time.Second {
		g.Expect(controllertest.Condition(w, workspacesv1.GPUCapacityCondition).Reason).NotTo(Equal(workspacesv1.PreemptingReason),
			"not before the holder's minimum runtime")
		g.Expect(controllertest.GetWorkspace(g, keyLow).Status.Phase).To(Equal(workspacesv1.PhaseRunning))
	}

	controllertest.EventuallyRunning(t, keyUrgent)
	stopped := controllertest.EventuallyStopped(t, keyLow)
	g.Expect(stopped.Status.Lifecycle.Preemption.At.Time.Sub(admittedAt)).To(BeNumerically(">=", 6*time.Second), "after the minimum runtime")
	g.Expect(stopped.Status.Lifecycle.StopReason).To(Equal(workspacesv1.StopPreempted))
	g.Expect(stopped.Spec.Lifecycle).NotTo(BeNil())
	g.Expect(stopped.Spec.Lifecycle.Stopped).To(BeTrue(), "Stay: stopped as if by its user")

	controllertest.DeleteWorkspace(t, keyUrgent)
	g.Consistently(func(g Gomega) {
		g.Expect(controllertest.GetWorkspace(g, keyLow).Status.Phase).To(Equal(workspacesv1.PhaseStopped))
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed(), "Stay: it does not queue again on its own")
	controllertest.SetStopped(t, keyLow, false)
	controllertest.EventuallyRunning(t, keyLow)
}

// TestPreemptionStaysWithinTheTenant: two namespaces share a cluster. A
// workspace of one, of a preempting priority, waits while a workspace of
// the other without a priority holds the GPU: another tenant is never
// preempted. Once one TenantQuota selects both namespaces, they are one
// tenant, and it preempts.
func TestPreemptionStaysWithinTheTenant(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	owner := controllertest.Env.NewNamespace(t, "preempt-own")
	other := controllertest.Env.NewNamespace(t, "preempt-oth")
	controllertest.ReadyCluster(t, owner, "c1")
	class := controllertest.HubClass(t, owner, "hub", nil)
	model := "A30-" + owner
	g.Expect(standin.AddGPUNode(ctx, controllertest.ChildClient, owner+"-a30", map[string]string{"exalsius.ai/gpu-model": model}, "nvidia.com/gpu", 1)).To(Succeed())
	urgentClass := preemptingClass(t, other, "urgent", 100, workspacesv1.PreemptLowerPriority, 0)

	keyLow := controllertest.CreateWorkspace(t, gpuWorkspace(owner, uniq(owner, "theirs"), class.Name, "c1", model, 1))
	controllertest.EventuallyRunning(t, keyLow)
	urgent := gpuWorkspace(other, uniq(other, "mine"), class.Name, "c1", model, 1)
	urgent.Spec.ClusterDeploymentRef.Namespace = owner
	urgent.Spec.PriorityClassName = urgentClass
	keyUrgent := controllertest.CreateWorkspace(t, urgent)
	controllertest.EventuallyPhase(t, keyUrgent, workspacesv1.PhaseWaiting)
	g.Consistently(func(g Gomega) {
		w := controllertest.GetWorkspace(g, keyLow)
		g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseRunning))
		g.Expect(w.Status.Lifecycle).To(BeNil())
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed(), "another tenant's workspace is not preempted")

	for _, ns := range []string{owner, other} {
		nsObj := &corev1.Namespace{}
		g.Expect(controllertest.Env.Client.Get(ctx, client.ObjectKey{Name: ns}, nsObj)).To(Succeed())
		controllertest.UpdateSpec(g, nsObj, func(n *corev1.Namespace) { n.Labels["tenant-"+owner] = "one" })
	}
	q := &quotav1alpha1.TenantQuota{ObjectMeta: metav1.ObjectMeta{Name: owner}, Spec: quotav1alpha1.TenantQuotaSpec{
		NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tenant-" + owner: "one"}},
		Hard:              quotav1alpha1.QuotaLimits{Workspaces: ptr.To[int64](10)},
	}}
	g.Expect(controllertest.Env.Client.Create(ctx, q)).To(Succeed())
	t.Cleanup(func() { _ = controllertest.Env.Client.Delete(context.Background(), q) })
	controllertest.EventuallyRunning(t, keyUrgent)
	g.Eventually(func(g Gomega) {
		w := controllertest.GetWorkspace(g, keyLow)
		g.Expect(w.Status.Lifecycle).NotTo(BeNil())
		g.Expect(w.Status.Lifecycle.Preemption).NotTo(BeNil(), "one tenant now: preempted")
		g.Expect(w.Status.Lifecycle.Preemption.By).To(Equal(keyUrgent.String()))
		g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseWaiting), "queued again behind it")
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
}

// TestPreemptionForRoomInTheTenantQuota: a TenantQuota of 8 CPUs, held by
// a running workspace without a priority. A workspace of a preempting
// priority that the quota refuses stops it — Preempted, named — and is
// charged in its place; the stopped one keeps its place in the workspaces
// count and queues again for the quota behind it.
func TestPreemptionForRoomInTheTenantQuota(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "preempt-q")
	nsObj := &corev1.Namespace{}
	g.Expect(controllertest.Env.Client.Get(ctx, client.ObjectKey{Name: ns}, nsObj)).To(Succeed())
	controllertest.UpdateSpec(g, nsObj, func(n *corev1.Namespace) { n.Labels["tenant-"+ns] = "one" })
	controllertest.ReadyCluster(t, ns, "c1")
	class := controllertest.HubClass(t, ns, "hub", nil)
	urgentClass := preemptingClass(t, ns, "urgent", 100, workspacesv1.PreemptLowerPriority, 0)
	q := &quotav1alpha1.TenantQuota{ObjectMeta: metav1.ObjectMeta{Name: ns}, Spec: quotav1alpha1.TenantQuotaSpec{
		NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tenant-" + ns: "one"}},
		Hard:              quotav1alpha1.QuotaLimits{Workspaces: ptr.To[int64](5), CPU: ptr.To(resource.MustParse("8"))},
	}}
	g.Expect(controllertest.Env.Client.Create(ctx, q)).To(Succeed())
	t.Cleanup(func() { _ = controllertest.Env.Client.Delete(context.Background(), q) })
	withCPU := func(name, priority string) *workspacesv1.WorkspaceDeployment {
		w := controllertest.NewWorkspace(ns, uniq(ns, name), class.Name, "c1")
		w.Spec.Resources = &workspacesv1.WorkspaceResourceSpec{PerReplica: &workspacesv1.PerReplicaResources{CPU: ptr.To(resource.MustParse("8"))}}
		w.Spec.PriorityClassName = priority
		return w
	}
	keyLow := controllertest.CreateWorkspace(t, withCPU("holder", ""))
	running := controllertest.EventuallyRunning(t, keyLow)
	var before controllertest.HubRelease
	g.Eventually(func(g Gomega) { before = controllertest.ReadHubRelease(g, running) }, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())

	keyUrgent := controllertest.CreateWorkspace(t, withCPU("urgent", urgentClass))
	controllertest.EventuallyRunning(t, keyUrgent)
	g.Eventually(func(g Gomega) {
		w := controllertest.GetWorkspace(g, keyLow)
		g.Expect(w.Status.Lifecycle).NotTo(BeNil())
		g.Expect(w.Status.Lifecycle.Preemption).NotTo(BeNil())
		g.Expect(w.Status.Lifecycle.Preemption.By).To(Equal(keyUrgent.String()))
		g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseWaiting), "it queues again, for the quota")
		g.Expect(controllertest.Condition(w, workspacesv1.QuotaReservedCondition)).NotTo(BeNil())
		g.Expect(controllertest.Condition(w, workspacesv1.QuotaReservedCondition).Status).To(Equal(metav1.ConditionFalse))
		rel := controllertest.ReadHubRelease(g, w)
		g.Expect(rel.PVC.UID).To(Equal(before.PVC.UID), "the volume claim is kept")
		g.Expect(warningNotes(g, ns, keyLow.Name, workspacesv1.PreemptedReason)).To(ContainElement(ContainSubstring(keyUrgent.String())))
		got := &quotav1alpha1.TenantQuota{}
		g.Expect(controllertest.Env.Client.Get(ctx, client.ObjectKeyFromObject(q), got)).To(Succeed())
		g.Expect(got.Status.Used.Workspaces).To(BeEquivalentTo(2), "the stopped one keeps its place in the count")
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())

	controllertest.DeleteWorkspace(t, keyUrgent)
	controllertest.EventuallyRunning(t, keyLow)
}
