package hostile_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apitypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
	"github.com/apiaryhq/apiary/test/charttest"
	"github.com/apiaryhq/apiary/test/standin"
	"github.com/apiaryhq/apiary/test/world"
	"github.com/apiaryhq/apiary/test/world/builder"
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
	world.EventuallyPhase(t, env.Client, victim, workspacesv1.PhaseRunning)
	d := releaseDeployment(t, victim, "web", 2, nil)

	attacker := workspace(attackerNS, name, class(t, attackerNS, nil), "c1")
	attacker.Spec.ClusterDeploymentRef.Namespace = victimNS
	attacker.Spec.Lifecycle = &workspacesv1.WorkspaceLifecycle{Stopped: true}
	g.Expect(env.Client.Create(context.Background(), attacker)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := get(g, attacker)
		g.Expect(got.Status.Lifecycle).NotTo(BeNil())
		g.Expect(got.Status.Lifecycle.StoppedAt).NotTo(BeNil(), "the attacker's workspace stopped: %s", got.Status.Message)
	}, timeout, 200*time.Millisecond).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(replicasOf(g, d)).To(Equal(int32(2)), "the victim's release was scaled by another tenant's workspace")
	}, 3*time.Second, 200*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(notOwnerEvents(g, attacker)).NotTo(BeZero(), "a NotOwner event on the attacker's workspace")
	}, timeout, 200*time.Millisecond).Should(Succeed())

	setStopped(g, victim, true)
	g.Eventually(func(g Gomega) {
		got := get(g, victim)
		g.Expect(got.Status.Lifecycle).NotTo(BeNil())
		g.Expect(got.Status.Lifecycle.StoppedAt).NotTo(BeNil(), "the victim stopped: %s", got.Status.Message)
		g.Expect(replicasOf(g, d)).To(BeZero())
		g.Expect(paused(g, victim)).To(BeTrue())
	}, timeout, 200*time.Millisecond).Should(Succeed())
	world.DeleteAndWait(t, env.Client, attacker)
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
		builder.CreateReady(t, env.Client, standin.NewClusterDeployment(ns, cd, "tpl", "cred"))
	}
	s := "n" + ns[len(ns)-5:]
	first := workspace(ns, s, class(t, ns, nil), "x-y")
	create(t, first)
	world.EventuallyPhase(t, env.Client, first, workspacesv1.PhaseRunning)
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
	world.DeleteAndWait(t, env.Client, second)
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
	world.EventuallyPhase(t, env.Client, w, workspacesv1.PhaseRunning)
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

// installFinalizerGuard renders the chart as `helm template` does and
// creates its ValidatingAdmissionPolicy and binding until the test ends.
func installFinalizerGuard(t *testing.T) {
	t.Helper()
	ch, err := charttest.Load()
	if err != nil {
		t.Fatal(err)
	}
	objs, err := charttest.Render(ch, "guard", "guard-system", nil)
	if err != nil {
		t.Fatal(err)
	}
	var guard []*unstructured.Unstructured
	for _, kind := range []string{"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
		found := charttest.Find(objs, kind)
		if len(found) != 1 {
			t.Fatalf("the chart renders %d %s, want 1", len(found), kind)
		}
		guard = append(guard, found[0])
	}
	for _, o := range guard {
		if err := env.Client.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %s %s: %v", o.GetKind(), o.GetName(), err)
		}
		obj := o
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
	}
}

// Test30_12TenantCannotRemoveTheFinalizer: with the chart's policy
// installed, a tenant bound to the chart's tenant-edit role may update its
// workspace and its own finalizers, but not remove Apiary's (merge patch,
// JSON patch or update, before or after it asked for deletion); the
// manager's removal on deletion goes through.
func Test30_12TenantCannotRemoveTheFinalizer(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	installFinalizerGuard(t)
	roles := charttest.InstallTenantRoles(t, env.Client, "guard")
	ns := tenant(t, "guard")
	charttest.BindInNamespace(t, env.Client, ns, roles["-tenant-edit"].Name, "trudy")
	trudy := charttest.Impersonate(t, env.Config, env.Scheme, "trudy")
	merge := func(s string) client.Patch { return client.RawPatch(apitypes.MergePatchType, []byte(s)) }

	w := workspace(ns, "guarded", class(t, ns, nil), "c1")
	create(t, w)
	world.EventuallyPhase(t, env.Client, w, workspacesv1.PhaseRunning)
	g.Expect(get(g, w).Finalizers).To(ContainElement(workspacesv1.WorkspaceDeploymentFinalizer))

	refused := func(g Gomega, err error) {
		g.Expect(apierrors.IsForbidden(err) || apierrors.IsInvalid(err)).To(BeTrue(), "refused: %v", err)
		g.Expect(err).To(MatchError(ContainSubstring(workspacesv1.WorkspaceDeploymentFinalizer)))
	}
	// The API server loads a new policy within a second or so: dry runs
	// (admitted as the real request, never stored) show when it did.
	g.Eventually(func(g Gomega) {
		refused(g, trudy.Patch(ctx, get(g, w), merge(`{"metadata":{"finalizers":null}}`), client.DryRunAll))
	}, timeout, 200*time.Millisecond).Should(Succeed())
	refused(g, trudy.Patch(ctx, get(g, w), merge(`{"metadata":{"finalizers":null}}`)))
	refused(g, trudy.Patch(ctx, get(g, w), client.RawPatch(apitypes.JSONPatchType, []byte(`[{"op":"remove","path":"/metadata/finalizers/0"}]`))))
	cur := get(g, w)
	cur.Finalizers = nil
	refused(g, trudy.Update(ctx, cur))

	// Its own finalizers and its spec are its to change.
	g.Expect(trudy.Patch(ctx, get(g, w), merge(`{"metadata":{"labels":{"team":"t"}}}`))).To(Succeed())
	cur = get(g, w)
	cur.Finalizers = append(cur.Finalizers, "example.com/mine")
	g.Expect(trudy.Update(ctx, cur)).To(Succeed())
	cur = get(g, w)
	cur.Finalizers = []string{workspacesv1.WorkspaceDeploymentFinalizer}
	g.Expect(trudy.Update(ctx, cur)).To(Succeed(), "removing a finalizer of its own")

	// Deleted, it still cannot skip the cleanup; the manager finishes it.
	g.Expect(trudy.Delete(ctx, get(g, w))).To(Succeed())
	err := trudy.Patch(ctx, get(g, w), merge(`{"metadata":{"finalizers":null}}`))
	if !apierrors.IsNotFound(err) {
		refused(g, err)
	}
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(w), &workspacesv1.WorkspaceDeployment{}))
	}, timeout, 200*time.Millisecond).Should(BeTrue(), "the manager removed its finalizer and the workspace is gone")
}

// Test30_12OrphanIsSwept: a workspace on a cluster of another namespace
// (no ownerReference can tie its ServiceSet to it) loses its finalizer
// (removed by someone exempt from the policy, or before it was installed)
// and goes without its cleanup. The manager finds its ServiceSet by its
// labels, removes it (the release goes, and its GPUs with it) and the
// workspace's namespace on the child.
func Test30_12OrphanIsSwept(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	crossNamespaceRefs(t)
	clusters := tenant(t, "orphan-cd")
	ns := tenant(t, "orphan")
	w := workspace(ns, "orphan-"+ns[len(ns)-5:], class(t, ns, nil), "c1")
	w.Spec.ClusterDeploymentRef.Namespace = clusters
	g.Expect(env.Client.Create(ctx, w)).To(Succeed())
	world.EventuallyPhase(t, env.Client, w, workspacesv1.PhaseRunning)
	ssKey := client.ObjectKey{Namespace: clusters, Name: plan.ServiceSetName("c1", w.Name)}
	g.Expect(env.Client.Get(ctx, ssKey, &k0rdentv1beta1.ServiceSet{})).To(Succeed())

	cur := get(g, w)
	cur.Finalizers = nil
	g.Expect(env.Client.Update(ctx, cur)).To(Succeed())
	g.Expect(env.Client.Delete(ctx, cur)).To(Succeed())
	g.Eventually(func(g Gomega) {
		err := env.Client.Get(ctx, ssKey, &k0rdentv1beta1.ServiceSet{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the orphaned ServiceSet is removed: %v", err)
		ns := &corev1.Namespace{}
		err = child.Client.Get(ctx, client.ObjectKey{Name: plan.ChildNamespace(w.Name)}, ns)
		g.Expect(apierrors.IsNotFound(err) || !ns.DeletionTimestamp.IsZero()).To(BeTrue(), "the child namespace is deleted")
	}, timeout, 200*time.Millisecond).Should(Succeed())
}
