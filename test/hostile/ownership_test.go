package hostile_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
	"github.com/apiaryhq/apiary/test/managertest"
	"github.com/apiaryhq/apiary/test/standin"
)

// crossNamespaceRefs runs the manager, for the rest of the test, as tenants
// sharing clusters run it: workspaces may target a ClusterDeployment of
// another namespace.
func crossNamespaceRefs(t *testing.T) {
	t.Helper()
	switchManager(t, "cross-ns", "--no-cross-namespace-refs=false")
}

// releaseDeployment creates on the child, in the workspace's namespace, a
// Deployment of its release as Helm marks one (the stand-in's chart runs
// none), with replicas and extra annotations.
func releaseDeployment(t *testing.T, w *workspacesv1.WorkspaceDeployment, name string, replicas int32, annotations map[string]string) *appsv1.Deployment {
	t.Helper()
	ns := plan.ChildNamespace(w.Name)
	a := map[string]string{"meta.helm.sh/release-name": plan.ReleaseName(w.Spec.ClusterDeploymentRef.Name, w.Name),
		"meta.helm.sh/release-namespace": ns}
	for k, v := range annotations {
		a[k] = v
	}
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: a},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
	if err := child.Client.Create(context.Background(), d); err != nil {
		t.Fatalf("creating Deployment %s/%s on the child: %v", ns, name, err)
	}
	return d
}

// replicasOf reads a Deployment's replicas on the child.
func replicasOf(g Gomega, d *appsv1.Deployment) int32 {
	got := &appsv1.Deployment{}
	g.Expect(child.Client.Get(context.Background(), client.ObjectKeyFromObject(d), got)).To(Succeed())
	return ptr.Deref(got.Spec.Replicas, 1)
}

// setStopped sets a workspace's spec.lifecycle.stopped.
func setStopped(g Gomega, w *workspacesv1.WorkspaceDeployment, stopped bool) {
	g.Eventually(func() error {
		cur := &workspacesv1.WorkspaceDeployment{}
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(w), cur); err != nil {
			return err
		}
		if cur.Spec.Lifecycle == nil {
			cur.Spec.Lifecycle = &workspacesv1.WorkspaceLifecycle{}
		}
		cur.Spec.Lifecycle.Stopped = stopped
		return env.Client.Update(context.Background(), cur)
	}, timeout, 100*time.Millisecond).Should(Succeed())
}

// paused reports whether a workspace's ServiceSet carries k0rdent's pause.
func paused(g Gomega, w *workspacesv1.WorkspaceDeployment) bool {
	ss := &k0rdentv1beta1.ServiceSet{}
	key := client.ObjectKey{Namespace: w.Spec.ClusterDeploymentRef.Namespace,
		Name: plan.ServiceSetName(w.Spec.ClusterDeploymentRef.Name, w.Name)}
	g.Expect(env.Client.Get(context.Background(), key, ss)).To(Succeed())
	_, ok := ss.Annotations[k0rdentv1beta1.ServiceSetPausedAnnotation]
	return ok
}

// Test30_6ForeignReleaseIsNotScaledNorUnpaused: with cross-namespace
// references allowed, a tenant creates, in its own namespace, a workspace of
// the victim's name on the victim's cluster, stopped. The victim's release
// in ws-<name> keeps its replicas (the namespace names the victim's
// namespace) and the attacker's workspace reads NotOwner; once the victim
// stopped, deleting the attacker's workspace leaves the victim's ServiceSet
// paused.
func Test30_6ForeignReleaseIsNotScaledNorUnpaused(t *testing.T) {
	g := NewWithT(t)
	crossNamespaceRefs(t)
	victimNS := tenant(t, "victim")
	attackerNS := tenant(t, "attacker")
	name := "shared-" + victimNS[len(victimNS)-5:]

	victim := workspace(victimNS, name, class(t, victimNS, nil), "c1")
	create(t, victim)
	managertest.EventuallyPhase(t, env.Client, victim, workspacesv1.PhaseRunning)
	d := releaseDeployment(t, victim, "web", 2, nil)

	attacker := workspace(attackerNS, name, class(t, attackerNS, nil), "c1")
	attacker.Spec.ClusterDeploymentRef.Namespace = victimNS
	attacker.Spec.Lifecycle = &workspacesv1.WorkspaceLifecycle{Stopped: true}
	g.Expect(env.Client.Create(context.Background(), attacker)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := get(g, attacker)
		g.Expect(got.Status.Lifecycle).NotTo(BeNil())
		g.Expect(got.Status.Lifecycle.StoppedAt).NotTo(BeNil(), "the attacker's workspace stopped: %s", got.Status.Message)
		g.Expect(notOwnerEvents(g, attacker)).NotTo(BeZero(), "a NotOwner event on the attacker's workspace")
	}, timeout, 200*time.Millisecond).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(replicasOf(g, d)).To(Equal(int32(2)), "the victim's release was scaled by another tenant's workspace")
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed())

	setStopped(g, victim, true)
	g.Eventually(func(g Gomega) {
		got := get(g, victim)
		g.Expect(got.Status.Lifecycle).NotTo(BeNil())
		g.Expect(got.Status.Lifecycle.StoppedAt).NotTo(BeNil(), "the victim stopped: %s", got.Status.Message)
		g.Expect(replicasOf(g, d)).To(BeZero())
		g.Expect(paused(g, victim)).To(BeTrue())
	}, timeout, 200*time.Millisecond).Should(Succeed())
	managertest.DeleteAndWait(t, env.Client, attacker)
	g.Consistently(func(g Gomega) {
		g.Expect(paused(g, victim)).To(BeTrue(), "the attacker's deletion unpaused the victim's ServiceSet")
	}, 2*time.Second, 200*time.Millisecond).Should(Succeed())
	ns := &corev1.Namespace{}
	g.Expect(child.Client.Get(context.Background(), client.ObjectKey{Name: plan.ChildNamespace(name)}, ns)).To(Succeed())
	g.Expect(ns.DeletionTimestamp.IsZero()).To(BeTrue(), "the victim's namespace is not deleted with the attacker's workspace")
}

// notOwnerEvents counts the NotOwner events of a workspace.
func notOwnerEvents(g Gomega, w *workspacesv1.WorkspaceDeployment) int {
	list := &corev1.EventList{}
	g.Expect(env.Client.List(context.Background(), list, client.InNamespace(w.Namespace))).To(Succeed())
	n := 0
	for _, e := range list.Items {
		if e.InvolvedObject.Name == w.Name && e.Reason == workspacesv1.NotOwnerReason {
			n++
		}
	}
	return n
}

// Test30_6CollidingNamesAreRefused: ServiceSet names join cluster and
// workspace with "-", so workspace y-<s> on cluster x and workspace <s> on
// cluster x-y share one. The second to come (another tenant's, with
// cross-namespace references) fails with NameConflict; the first keeps its
// ServiceSet, running, and keeps it when the second is deleted.
func Test30_6CollidingNamesAreRefused(t *testing.T) {
	g := NewWithT(t)
	crossNamespaceRefs(t)
	ns := tenant(t, "collide")
	other := tenant(t, "collider")
	for _, cd := range []string{"x", "x-y"} {
		managertest.CreateReady(t, env.Client, standin.NewClusterDeployment(ns, cd, "tpl", "cred"))
	}
	s := "n" + ns[len(ns)-5:]
	first := workspace(ns, s, class(t, ns, nil), "x-y")
	create(t, first)
	managertest.EventuallyPhase(t, env.Client, first, workspacesv1.PhaseRunning)
	name := plan.ServiceSetName("x-y", s)
	g.Expect(plan.ServiceSetName("x", "y-"+s)).To(Equal(name), "the names collide")

	second := workspace(other, "y-"+s, class(t, other, nil), "x")
	second.Spec.ClusterDeploymentRef.Namespace = ns
	create(t, second)
	g.Eventually(func(g Gomega) {
		got := get(g, second)
		g.Expect(got.Status.Phase).To(Equal(workspacesv1.PhaseFailed), "message: %s", got.Status.Message)
		g.Expect(got.Status.FailureContext).NotTo(BeNil())
		g.Expect(got.Status.FailureContext.Reason).To(Equal(workspacesv1.NameConflictReason))
	}, timeout, 200*time.Millisecond).Should(Succeed())
	managertest.DeleteAndWait(t, env.Client, second)
	g.Consistently(func(g Gomega) {
		ss := &k0rdentv1beta1.ServiceSet{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, ss)).To(Succeed())
		g.Expect(ss.DeletionTimestamp.IsZero()).To(BeTrue())
		g.Expect(get(g, first).Status.Phase).To(Equal(workspacesv1.PhaseRunning))
	}, 2*time.Second, 200*time.Millisecond).Should(Succeed())
}

// Test30_7PlantedSavedCountIsNotRestored: the tenant's chart passes
// annotations from values, so the tenant plants
// apiary.exalsius.ai/stopped-replicas=10000 on its running Deployment and 5
// on one that is off. Stopping records the running one's own count on the
// workspace's status, and starting restores that, never the planted values
// (and never more than the workspace's admitted replicas).
func Test30_7PlantedSavedCountIsNotRestored(t *testing.T) {
	g := NewWithT(t)
	ns := tenant(t, "planted")
	w := workspace(ns, "planted-"+ns[len(ns)-5:], class(t, ns, nil), "c1")
	create(t, w)
	managertest.EventuallyPhase(t, env.Client, w, workspacesv1.PhaseRunning)
	web := releaseDeployment(t, w, "web", 1, map[string]string{"apiary.exalsius.ai/stopped-replicas": "10000"})
	idle := releaseDeployment(t, w, "idle", 0, map[string]string{"apiary.exalsius.ai/stopped-replicas": "5"})

	setStopped(g, w, true)
	g.Eventually(func(g Gomega) {
		got := get(g, w)
		g.Expect(got.Status.Lifecycle).NotTo(BeNil())
		g.Expect(got.Status.Lifecycle.StoppedAt).NotTo(BeNil(), "stopped: %s", got.Status.Message)
		g.Expect(replicasOf(g, web)).To(BeZero())
		g.Expect(got.Status.Lifecycle.StoppedWorkloads).To(ConsistOf(
			workspacesv1.StoppedWorkload{Kind: "Deployment", Name: "web", Replicas: 1}))
	}, timeout, 200*time.Millisecond).Should(Succeed())

	setStopped(g, w, false)
	g.Eventually(func(g Gomega) {
		got := get(g, w)
		g.Expect(got.Status.Phase).To(Equal(workspacesv1.PhaseRunning), "message: %s", got.Status.Message)
		g.Expect(got.Status.Lifecycle.StoppedWorkloads).To(BeEmpty())
		g.Expect(replicasOf(g, web)).To(Equal(int32(1)), "the planted count was restored")
		g.Expect(replicasOf(g, idle)).To(BeZero(), "a Deployment Apiary never stopped was started")
	}, timeout, 200*time.Millisecond).Should(Succeed())
}
