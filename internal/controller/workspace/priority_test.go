package workspace_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/controllertest"
	"github.com/apiaryhq/apiary/test/standin"
)

// priorityClass creates a WorkspacePriorityClass and removes it after the test.
func priorityClass(t *testing.T, name string, value int32, sel *metav1.LabelSelector,
	mutate ...func(*workspacesv1.WorkspacePriorityClass)) *workspacesv1.WorkspacePriorityClass {
	t.Helper()
	pc := &workspacesv1.WorkspacePriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value, NamespaceSelector: sel}
	for _, m := range mutate {
		m(pc)
	}
	if err := controllertest.Env.Client.Create(context.Background(), pc); err != nil {
		t.Fatalf("creating WorkspacePriorityClass: %v", err)
	}
	t.Cleanup(func() { _ = controllertest.Env.Client.Delete(context.Background(), pc) })
	return pc
}

// TestPriorityYoungerHighBeforeOlderLow fills a 2-GPU node; an older
// workspace without a priority waits, then a younger one of a priority its
// namespace may use. When the node frees, the younger runs first.
func TestPriorityYoungerHighBeforeOlderLow(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "prio")
	controllertest.ReadyCluster(t, ns, "c1")
	controllertest.ServiceTemplate(t, ns, "tmpl", nil)
	controllertest.WorkspaceClass(t, "g-"+ns, ns, "tmpl", nil)
	model := "L40-" + ns
	g.Expect(standin.AddGPUNode(ctx, controllertest.ChildClient, ns+"-l40", map[string]string{"exalsius.ai/gpu-model": model}, "nvidia.com/gpu", 2)).To(Succeed())
	priorityClass(t, "urgent-"+ns, 100, &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}})

	first := gpuWorkspace(ns, "prio-first", "g-"+ns, "c1", model, 2)
	g.Expect(controllertest.Env.Client.Create(ctx, first)).To(Succeed())
	controllertest.EventuallyRunning(t, client.ObjectKeyFromObject(first))

	old := gpuWorkspace(ns, "prio-old", "g-"+ns, "c1", model, 2)
	g.Expect(controllertest.Env.Client.Create(ctx, old)).To(Succeed())
	w := controllertest.EventuallyPhase(t, client.ObjectKeyFromObject(old), workspacesv1.PhaseWaiting)
	g.Expect(w.Status.Priority).To(BeNil(), "no priority class: no priority on the status")
	g.Expect(controllertest.Condition(w, workspacesv1.PriorityResolvedCondition)).To(BeNil())
	time.Sleep(1100 * time.Millisecond) // a later creation timestamp

	urgent := gpuWorkspace(ns, "prio-urgent", "g-"+ns, "c1", model, 2)
	urgent.Spec.PriorityClassName = "urgent-" + ns
	g.Expect(controllertest.Env.Client.Create(ctx, urgent)).To(Succeed())
	w = controllertest.EventuallyPhase(t, client.ObjectKeyFromObject(urgent), workspacesv1.PhaseWaiting)
	g.Expect(w.Status.Priority).To(Equal(&workspacesv1.WorkspacePriority{ClassName: "urgent-" + ns, Value: 100}))
	g.Expect(controllertest.ConditionStatus(w, workspacesv1.PriorityResolvedCondition)).To(Equal(metav1.ConditionTrue))

	g.Expect(controllertest.Env.Client.Delete(ctx, first)).To(Succeed())
	controllertest.EventuallyRunning(t, client.ObjectKeyFromObject(urgent))
	g.Consistently(func(g Gomega) {
		g.Expect(controllertest.GetWorkspace(g, client.ObjectKeyFromObject(old)).Status.Phase).To(Equal(workspacesv1.PhaseWaiting))
	}, 2*time.Second, 200*time.Millisecond).Should(Succeed(), "the older workspace of a lower priority keeps waiting")
}

// TestPriorityNotAllowedIsRefused: a tenant that names a priority class
// whose namespaceSelector does not select its namespace is refused
// (Failed, a Warning event, nothing delivered); once the platform labels
// the namespace, the same workspace runs with that priority. A class's
// default needs no selection.
func TestPriorityNotAllowedIsRefused(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "prio-deny")
	controllertest.ReadyCluster(t, ns, "c1")
	controllertest.ServiceTemplate(t, ns, "tmpl", nil)
	controllertest.WorkspaceClass(t, "c-"+ns, ns, "tmpl", nil)
	top := "top-" + ns
	priorityClass(t, top, 1000000, &metav1.LabelSelector{MatchLabels: map[string]string{"tier-" + ns: "platform"}})

	greedy := controllertest.NewWorkspace(ns, "greedy", "c-"+ns, "c1")
	greedy.Spec.PriorityClassName = top
	g.Expect(controllertest.Env.Client.Create(ctx, greedy)).To(Succeed())
	key := client.ObjectKeyFromObject(greedy)
	w := controllertest.EventuallyPhase(t, key, workspacesv1.PhaseFailed)
	g.Expect(controllertest.Condition(w, commonv1.ReadyCondition).Reason).To(Equal(workspacesv1.PriorityNotAllowedReason))
	c := controllertest.Condition(w, workspacesv1.PriorityResolvedCondition)
	g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(c.Message).To(ContainSubstring("does not select the namespace"))
	g.Expect(w.Status.Priority).To(BeNil())
	err := controllertest.Env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "wsd-c1-greedy"}, &k0rdentv1beta1.ServiceSet{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "nothing is delivered for a refused workspace")
	g.Eventually(func(g Gomega) {
		g.Expect(warningNotes(g, ns, key.Name, "")).To(ContainElement(ContainSubstring(top)))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())

	// The platform grants the namespace the priority.
	nsObj := &corev1.Namespace{}
	g.Expect(controllertest.Env.Client.Get(ctx, client.ObjectKey{Name: ns}, nsObj)).To(Succeed())
	controllertest.UpdateSpec(g, nsObj, func(n *corev1.Namespace) { n.Labels["tier-"+ns] = "platform" })
	w = controllertest.EventuallyRunning(t, key)
	g.Expect(w.Status.Priority).To(Equal(&workspacesv1.WorkspacePriority{ClassName: top, Value: 1000000}))

	// A class's default applies without a selection; a missing class is waited for.
	later := "later-" + ns
	controllertest.WorkspaceClass(t, "d-"+ns, ns, "tmpl", func(c *workspacesv1.WorkspaceClass) { c.Spec.PriorityClassName = later })
	byClass := controllertest.NewWorkspace(ns, "by-class", "d-"+ns, "c1")
	g.Expect(controllertest.Env.Client.Create(ctx, byClass)).To(Succeed())
	g.Eventually(func(g Gomega) {
		w := controllertest.GetWorkspace(g, client.ObjectKeyFromObject(byClass))
		g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhasePending))
		c := controllertest.Condition(w, workspacesv1.PriorityResolvedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(workspacesv1.PriorityClassNotFoundReason))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
	priorityClass(t, later, 5, nil) // no namespace may name it; the class gives it
	w = controllertest.EventuallyRunning(t, client.ObjectKeyFromObject(byClass))
	g.Expect(w.Status.Priority).To(Equal(&workspacesv1.WorkspacePriority{ClassName: later, Value: 5}))
}

// TestPriorityChangeReSortsTheQueue: under StrictFIFO a small younger
// request waits behind an older large one although a GPU is free; when the
// older one is given a lower priority, the younger is ahead and runs at
// once, woken by the older one's status (not by the minute's resync).
func TestPriorityChangeReSortsTheQueue(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "prio-move")
	controllertest.ReadyCluster(t, ns, "c1")
	controllertest.ServiceTemplate(t, ns, "tmpl", nil)
	controllertest.WorkspaceClass(t, "g-"+ns, ns, "tmpl", nil)
	model := "T4-" + ns
	g.Expect(standin.AddGPUNode(ctx, controllertest.ChildClient, ns+"-t4", map[string]string{"exalsius.ai/gpu-model": model}, "nvidia.com/gpu", 2)).To(Succeed())
	priorityClass(t, "later-"+ns, -10, &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}})

	holder := gpuWorkspace(ns, "move-holder", "g-"+ns, "c1", model, 1)
	g.Expect(controllertest.Env.Client.Create(ctx, holder)).To(Succeed())
	controllertest.EventuallyRunning(t, client.ObjectKeyFromObject(holder))
	big := gpuWorkspace(ns, "move-big", "g-"+ns, "c1", model, 2)
	g.Expect(controllertest.Env.Client.Create(ctx, big)).To(Succeed())
	controllertest.EventuallyPhase(t, client.ObjectKeyFromObject(big), workspacesv1.PhaseWaiting)
	time.Sleep(1100 * time.Millisecond) // a later creation timestamp
	small := gpuWorkspace(ns, "move-small", "g-"+ns, "c1", model, 1)
	g.Expect(controllertest.Env.Client.Create(ctx, small)).To(Succeed())
	g.Eventually(func(g Gomega) {
		w := controllertest.GetWorkspace(g, client.ObjectKeyFromObject(small))
		g.Expect(controllertest.Condition(w, commonv1.ReadyCondition)).NotTo(BeNil())
		g.Expect(controllertest.Condition(w, commonv1.ReadyCondition).Reason).To(Equal(workspacesv1.WaitingBehindOlderReason))
		g.Expect(w.Status.Message).To(HaveSuffix("`apiary queue` shows its place in the queue"))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())

	// controllertest.Timeout is shorter than the Waiting resync (a minute):
	// only the sibling's status change can wake the small one in time.
	controllertest.UpdateSpec(g, big, func(w *workspacesv1.WorkspaceDeployment) { w.Spec.PriorityClassName = "later-" + ns })
	controllertest.EventuallyRunning(t, client.ObjectKeyFromObject(small))
	w := controllertest.GetWorkspace(g, client.ObjectKeyFromObject(big))
	g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseWaiting))
	g.Expect(w.Status.Priority).To(Equal(&workspacesv1.WorkspacePriority{ClassName: "later-" + ns, Value: -10}))
}

// TestPriorityNotAllowedDoesNotHoldBackAStop: a tenant writes a priority
// class its namespace was not granted onto a running workspace together
// with a stop (as it might to escape expiry or culling): the stop goes
// through, and the refusal comes only when it starts again.
func TestPriorityNotAllowedDoesNotHoldBackAStop(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "prio-stop")
	controllertest.ReadyCluster(t, ns, "c1")
	controllertest.ServiceTemplate(t, ns, "tmpl", nil)
	controllertest.WorkspaceClass(t, "c-"+ns, ns, "tmpl", nil)
	priorityClass(t, "top-"+ns, 1000, nil)
	ws := controllertest.NewWorkspace(ns, "prio-stopper", "c-"+ns, "c1")
	g.Expect(controllertest.Env.Client.Create(ctx, ws)).To(Succeed())
	key := client.ObjectKeyFromObject(ws)
	controllertest.EventuallyRunning(t, key)

	controllertest.UpdateWorkspace(t, key, func(w *workspacesv1.WorkspaceDeployment) {
		w.Spec.PriorityClassName = "top-" + ns
		w.Spec.Lifecycle = &workspacesv1.WorkspaceLifecycle{Stopped: true}
	})
	stopped := controllertest.EventuallyStopped(t, key)
	g.Expect(stopped.Status.Priority).To(BeNil())

	controllertest.SetStopped(t, key, false)
	w := controllertest.EventuallyPhase(t, key, workspacesv1.PhaseFailed)
	g.Expect(controllertest.Condition(w, commonv1.ReadyCondition).Reason).To(Equal(workspacesv1.PriorityNotAllowedReason))
}
