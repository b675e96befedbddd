package hostile_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/test/world"
)

// Test15PreemptionNeverCrossesTenants: tenants share a cluster (cross-
// namespace references allowed; the manager, as its own process, requeues
// preempted workspaces at their place: --preemption-requeue=Creation). An
// intruder granted a preempting priority targets the owner's cluster,
// whose one GPU the owner's workspace holds: it waits, and the owner's
// workspace runs on, untouched. The owner's own preempting workspace, of a
// higher priority than the intruder's, does stop it (one tenant):
// Preempted, named, requeued at its creation.
func Test15PreemptionNeverCrossesTenants(t *testing.T) {
	g := NewWithT(t)
	switchManager(t, "preempt-creation", "--no-cross-namespace-refs=false", "--preemption-requeue=Creation")
	owner, intruder := tenant(t, "preempt-own"), tenant(t, "preempt-int")
	model := gpuNode(t, owner)
	// The owner's priority is above the intruder's: a preemption for a
	// workspace behind the intruder in the queue would hand it the room,
	// and makes none (docs/admission.md, "Preemption").
	for ns, value := range map[string]int32{owner: 200, intruder: 100} {
		labelNamespace(t, ns, map[string]string{"urgent-granted": ns})
		create(t, &workspacesv1.WorkspacePriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "urgent-" + ns}, Value: value,
			PreemptionPolicy:  workspacesv1.PreemptLowerPriority,
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"urgent-granted": ns}}})
	}
	withGPU := func(ns, name, cls, priority string) *workspacesv1.WorkspaceDeployment {
		w := workspace(ns, name, cls, "c1")
		w.Spec.ClusterDeploymentRef.Namespace = owner
		w.Spec.Resources = &workspacesv1.WorkspaceResourceSpec{PerReplica: &workspacesv1.PerReplicaResources{
			GPUCount: ptr.To[int32](1), GPUType: ptr.To(model)}}
		w.Spec.PriorityClassName = priority
		return w
	}
	sfx := owner[len(owner)-5:]
	ownerClass := class(t, owner, nil)
	theirs := withGPU(owner, "theirs-"+sfx, ownerClass, "")
	create(t, theirs)
	running := world.EventuallyPhase(t, env.Client, theirs, workspacesv1.PhaseRunning)

	intrusion := withGPU(intruder, "intrusion-"+sfx, class(t, intruder, nil), "urgent-"+intruder)
	create(t, intrusion)
	world.EventuallyPhase(t, env.Client, intrusion, workspacesv1.PhaseWaiting)
	g.Consistently(func(g Gomega) {
		w := get(g, theirs)
		g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseRunning))
		g.Expect(w.Status.Lifecycle).To(BeNil(), "no stop was written")
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed(), "another tenant's preempting priority stops nothing of the owner's")
	w := get(g, intrusion)
	g.Expect(condition(w, workspacesv1.GPUCapacityCondition).Reason).NotTo(Equal(workspacesv1.PreemptingReason), w.Status.Message)

	own := withGPU(owner, "own-urgent-"+sfx, ownerClass, "urgent-"+owner)
	create(t, own)
	world.EventuallyPhase(t, env.Client, own, workspacesv1.PhaseRunning)
	g.Eventually(func(g Gomega) {
		w := get(g, theirs)
		l := w.Status.Lifecycle
		g.Expect(l).NotTo(BeNil())
		g.Expect(l.Preemption).NotTo(BeNil(), "the owner's own priority preempts it")
		g.Expect(l.Preemption.By).To(Equal(owner + "/" + own.Name))
		g.Expect(l.Preemption.QueueAs).NotTo(BeNil())
		g.Expect(l.Preemption.QueueAs.Time).To(BeTemporally("==", running.CreationTimestamp.Time), "Creation: its place is kept")
		g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseWaiting), "it queued again on its own")
	}, timeout, 200*time.Millisecond).Should(Succeed())
}

// Test16QuotaPreemptionKeepsTheVolume: a tenant's TenantQuota of 8 CPUs is
// held by its running workspace (a release with a volume claim). Its
// workspace of a preempting priority, refused by the quota, stops it: the
// holder is preempted, scaled away under a paused ServiceSet with its
// claim kept, and queues for the quota; once the preemptor is deleted it
// runs again on the same claim (manager as its own process).
func Test16QuotaPreemptionKeepsTheVolume(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := tenant(t, "preempt-q")
	labelNamespace(t, ns, map[string]string{"tenant": ns, "urgent-granted": ns})
	create(t, &workspacesv1.WorkspacePriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "urgent-" + ns}, Value: 100,
		PreemptionPolicy:  workspacesv1.PreemptLowerPriority,
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"urgent-granted": ns}}})
	create(t, &quotav1alpha1.TenantQuota{ObjectMeta: metav1.ObjectMeta{Name: "q-" + ns}, Spec: quotav1alpha1.TenantQuotaSpec{
		NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tenant": ns}},
		Hard:              quotav1alpha1.QuotaLimits{CPU: ptr.To(resource.MustParse("8"))},
	}})
	cls := hubClass(t, ns, nil)
	sfx := ns[len(ns)-5:]
	withCPU := func(name, priority string) *workspacesv1.WorkspaceDeployment {
		w := workspace(ns, name+"-"+sfx, cls, "c1")
		w.Spec.Resources = &workspacesv1.WorkspaceResourceSpec{PerReplica: &workspacesv1.PerReplicaResources{CPU: ptr.To(resource.MustParse("8"))}}
		w.Spec.PriorityClassName = priority
		return w
	}
	holder, urgent := withCPU("qholder", ""), withCPU("qurgent", "urgent-"+ns)
	create(t, holder)
	world.EventuallyPhase(t, env.Client, holder, workspacesv1.PhaseRunning)
	claim := &corev1.PersistentVolumeClaim{}
	claimKey := client.ObjectKey{Namespace: "ws-" + holder.Name, Name: "wsd-c1-" + holder.Name}
	g.Eventually(func() error { return child.Client.Get(ctx, claimKey, claim) }, timeout, 200*time.Millisecond).Should(Succeed())

	create(t, urgent)
	world.EventuallyPhase(t, env.Client, urgent, workspacesv1.PhaseRunning)
	g.Eventually(func(g Gomega) {
		w := get(g, holder)
		g.Expect(w.Status.Lifecycle).NotTo(BeNil())
		g.Expect(w.Status.Lifecycle.Preemption).NotTo(BeNil(), "message: %s", w.Status.Message)
		g.Expect(w.Status.Lifecycle.Preemption.By).To(Equal(ns + "/" + urgent.Name))
		g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseWaiting), "it queues for the quota again")
		expectScaledAway(g, w)
		kept := &corev1.PersistentVolumeClaim{}
		g.Expect(child.Client.Get(ctx, claimKey, kept)).To(Succeed())
		g.Expect(kept.UID).To(Equal(claim.UID), "the volume claim is kept")
	}, timeout, 500*time.Millisecond).Should(Succeed())

	g.Expect(env.Client.Delete(ctx, urgent)).To(Succeed())
	world.EventuallyPhase(t, env.Client, holder, workspacesv1.PhaseRunning)
	kept := &corev1.PersistentVolumeClaim{}
	g.Expect(child.Client.Get(ctx, claimKey, kept)).To(Succeed())
	g.Expect(kept.UID).To(Equal(claim.UID), "it runs again on the same claim")
}
