package hostile_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/test/world"
)

// Test14PriorityIsNotSelfGranted: a tenant names the platform's top
// WorkspacePriorityClass to jump its TenantQuota's queue. The workspace is
// refused (Failed, PriorityNotAllowed) and takes no place in the queue;
// the priority its namespace was granted puts a younger workspace ahead
// of an older one without it, and when room frees the younger runs first.
func Test14PriorityIsNotSelfGranted(t *testing.T) {
	g := NewWithT(t)
	ns := tenant(t, "prio")
	labelNamespace(t, ns, map[string]string{"tenant": ns, "urgent-granted": ns})
	create(t, &workspacesv1.WorkspacePriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "top-" + ns}, Value: 1000000,
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"platform-only": "true"}}})
	create(t, &workspacesv1.WorkspacePriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "urgent-" + ns}, Value: 100,
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"urgent-granted": ns}}})
	create(t, &quotav1alpha1.TenantQuota{ObjectMeta: metav1.ObjectMeta{Name: "q-" + ns}, Spec: quotav1alpha1.TenantQuotaSpec{
		NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tenant": ns}},
		Hard:              quotav1alpha1.QuotaLimits{CPU: ptr.To(resource.MustParse("8"))},
	}})
	cls := class(t, ns, nil)
	withCPU := func(name, priority string) *workspacesv1.WorkspaceDeployment {
		w := workspace(ns, name, cls, "c1")
		w.Spec.Resources = &workspacesv1.WorkspaceResourceSpec{PerReplica: &workspacesv1.PerReplicaResources{CPU: ptr.To(resource.MustParse("8"))}}
		w.Spec.PriorityClassName = priority
		return w
	}
	holder, older := withCPU("prio-holder", ""), withCPU("prio-older", "")
	greedy, urgent := withCPU("prio-greedy", "top-"+ns), withCPU("prio-urgent", "urgent-"+ns)

	create(t, holder)
	world.EventuallyPhase(t, env.Client, holder, workspacesv1.PhaseRunning)
	create(t, older)
	world.EventuallyPhase(t, env.Client, older, workspacesv1.PhaseWaiting)
	time.Sleep(1100 * time.Millisecond) // creation times have a resolution of one second

	create(t, greedy)
	w := world.EventuallyPhase(t, env.Client, greedy, workspacesv1.PhaseFailed)
	c := condition(w, workspacesv1.PriorityResolvedCondition)
	g.Expect(c).NotTo(BeNil())
	g.Expect(c.Reason).To(Equal(workspacesv1.PriorityNotAllowedReason))
	g.Expect(w.Status.Priority).To(BeNil(), "no priority was granted")
	g.Expect(w.Status.QuotaCharges).To(BeEmpty(), "a refused workspace is charged nothing")

	create(t, urgent)
	g.Eventually(func(g Gomega) {
		w := get(g, urgent)
		g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseWaiting), "message: %s", w.Status.Message)
		g.Expect(w.Status.Priority).To(Equal(&workspacesv1.WorkspacePriority{ClassName: "urgent-" + ns, Value: 100}))
	}, timeout, 200*time.Millisecond).Should(Succeed())

	setSpec(t, holder, func(w *workspacesv1.WorkspaceDeployment) {
		w.Spec.Lifecycle = &workspacesv1.WorkspaceLifecycle{Stopped: true}
	})
	g.Eventually(func(g Gomega) {
		w := get(g, urgent)
		g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseRunning), "the younger workspace of the granted priority runs first: %s", w.Status.Message)
	}, timeout, 500*time.Millisecond).Should(Succeed())
	g.Consistently(func(g Gomega) {
		w := get(g, older)
		g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseWaiting), "the older one without a priority waits: %s", w.Status.Message)
	}, 2*time.Second, 200*time.Millisecond).Should(Succeed())
	g.Expect(get(g, greedy).Status.Phase).To(Equal(workspacesv1.PhaseFailed), "the self-granted one stays refused")
}
