package hostile_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/delivery/canon"
	"github.com/apiaryhq/apiary/internal/workspace/scaledown"
	"github.com/apiaryhq/apiary/test/standin"
	"github.com/apiaryhq/apiary/test/world"
)

// The lifecycle's second pass (issue 30, items 3, 4, 5 and 9): what a
// tenant can do with spec.suspend, a spec that no longer renders, a
// suspended place in a queue, and workloads of a stopped workspace.

// stoppedBound is how soon a stopped workspace's workloads that run again
// are scaled away once a pod of theirs appears (docs/lifecycle.md: the
// child's pod events wake it; stoppedResync, 5 minutes, bounds a missed
// event).
const stoppedBound = 30 * time.Second

// TestLifecycle3SuspendStillExpires: a tenant suspends its running
// workspace to escape its class's maxLifetime. Suspend pauses delivery
// only: at expiry the workspace is stopped, its workloads scaled to zero
// and its ServiceSet paused.
func TestLifecycle3SuspendStillExpires(t *testing.T) {
	g := NewWithT(t)
	ns := tenant(t, "suspexp")
	cls := hubClass(t, ns, func(c *workspacesv1.WorkspaceClass) {
		c.Spec.Lifecycle = &workspacesv1.ClassLifecycle{MaxLifetime: &metav1.Duration{Duration: 30 * time.Second},
			ExpiryWarning: &metav1.Duration{Duration: 5 * time.Second}}
	})
	w := workspace(ns, "suspexp", cls, "c1")
	create(t, w)
	world.EventuallyPhase(t, env.Client, w, workspacesv1.PhaseRunning)
	setSpec(t, w, func(w *workspacesv1.WorkspaceDeployment) { w.Spec.Suspend = true })

	g.Eventually(func(g Gomega) {
		got := get(g, w)
		g.Expect(got.Status.Phase).To(Equal(workspacesv1.PhaseStopped), "message: %s", got.Status.Message)
		g.Expect(got.Status.Lifecycle).NotTo(BeNil())
		g.Expect(got.Status.Lifecycle.StopReason).To(Equal(workspacesv1.StopExpired))
		g.Expect(got.Status.Lifecycle.StoppedAt).NotTo(BeNil())
		expectScaledAway(g, got)
	}, 90*time.Second, 500*time.Millisecond).Should(Succeed())
	g.Expect(get(g, w).Spec.Suspend).To(BeTrue(), "the tenant's suspend is left as it is")
}

// TestLifecycle4StopDoesNotRender: a tenant breaks its running workspace's
// values (a valuesFrom Secret that does not exist), then asks it to stop.
// The stop pauses what was delivered and scales the release to zero
// without rendering the spec: it stops, and gives back its admission.
func TestLifecycle4StopDoesNotRender(t *testing.T) {
	g := NewWithT(t)
	ns := tenant(t, "stopbroken")
	w := workspace(ns, "stopbroken", hubClass(t, ns, nil), "c1")
	w.Spec.Resources = &workspacesv1.WorkspaceResourceSpec{PerReplica: &workspacesv1.PerReplicaResources{CPU: ptr.To(resource.MustParse("1"))}}
	create(t, w)
	world.EventuallyPhase(t, env.Client, w, workspacesv1.PhaseRunning)
	g.Expect(get(g, w).Status.Admission).NotTo(BeNil())

	setSpec(t, w, func(w *workspacesv1.WorkspaceDeployment) {
		w.Spec.ValuesFrom = []workspacesv1.ValuesReference{{Kind: "Secret", Name: "does-not-exist"}}
	})
	time.Sleep(2 * time.Second) // the broken spec is seen before the stop
	setSpec(t, w, func(w *workspacesv1.WorkspaceDeployment) {
		w.Spec.Lifecycle = &workspacesv1.WorkspaceLifecycle{Stopped: true}
	})
	g.Eventually(func(g Gomega) {
		got := get(g, w)
		g.Expect(got.Status.Phase).To(Equal(workspacesv1.PhaseStopped), "message: %s", got.Status.Message)
		g.Expect(got.Status.Lifecycle).NotTo(BeNil())
		g.Expect(got.Status.Lifecycle.StoppedAt).NotTo(BeNil())
		g.Expect(got.Status.Admission).To(BeNil(), "the admission is given back")
		expectScaledAway(g, got)
	}, timeout, 500*time.Millisecond).Should(Succeed())
}

// TestLifecycle5SuspendedWaiterLeavesTheGPUQueue: on a node of one GPU, a
// tenant's older workspace waits behind a running one, a younger one
// behind both; the tenant suspends the older one. When the GPU frees up
// the younger one runs: the suspended one held no place.
func TestLifecycle5SuspendedWaiterLeavesTheGPUQueue(t *testing.T) {
	ns := tenant(t, "suspgpu")
	model := gpuNode(t, ns)
	cls := class(t, ns, nil)
	withGPU := func(name string) *workspacesv1.WorkspaceDeployment {
		w := workspace(ns, name, cls, "c1")
		w.Spec.Resources = &workspacesv1.WorkspaceResourceSpec{PerReplica: &workspacesv1.PerReplicaResources{
			GPUCount: ptr.To[int32](1), GPUType: ptr.To(model)}}
		return w
	}
	holder, older, younger := withGPU("gpu-holder"), withGPU("gpu-older"), withGPU("gpu-younger")
	suspendedWaiterLeaves(t, holder, older, younger)
}

// TestLifecycle5SuspendedWaiterLeavesTheQuotaQueue: the same in a
// TenantQuota's queue: a quota of 8 CPUs, one running workspace of 8, an
// older and a younger waiter; the older one is suspended, the running one
// stops, and the younger one runs.
func TestLifecycle5SuspendedWaiterLeavesTheQuotaQueue(t *testing.T) {
	ns := tenant(t, "suspquota")
	labelNamespace(t, ns, map[string]string{"tenant": ns})
	create(t, &quotav1alpha1.TenantQuota{ObjectMeta: metav1.ObjectMeta{Name: "q-" + ns}, Spec: quotav1alpha1.TenantQuotaSpec{
		NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tenant": ns}},
		Hard:              quotav1alpha1.QuotaLimits{CPU: ptr.To(resource.MustParse("8"))},
	}})
	cls := class(t, ns, nil)
	withCPU := func(name string) *workspacesv1.WorkspaceDeployment {
		w := workspace(ns, name, cls, "c1")
		w.Spec.Resources = &workspacesv1.WorkspaceResourceSpec{PerReplica: &workspacesv1.PerReplicaResources{CPU: ptr.To(resource.MustParse("8"))}}
		return w
	}
	holder, older, younger := withCPU("quota-holder"), withCPU("quota-older"), withCPU("quota-younger")
	suspendedWaiterLeaves(t, holder, older, younger)
}

// suspendedWaiterLeaves runs holder, queues older then younger behind it,
// suspends older, stops holder, and expects younger to run while older
// stays out of the queue.
func suspendedWaiterLeaves(t *testing.T, holder, older, younger *workspacesv1.WorkspaceDeployment) {
	t.Helper()
	g := NewWithT(t)
	create(t, holder)
	world.EventuallyPhase(t, env.Client, holder, workspacesv1.PhaseRunning)
	create(t, older)
	world.EventuallyPhase(t, env.Client, older, workspacesv1.PhaseWaiting)
	time.Sleep(1100 * time.Millisecond) // creation times have a resolution of one second
	create(t, younger)
	world.EventuallyPhase(t, env.Client, younger, workspacesv1.PhaseWaiting)

	setSpec(t, older, func(w *workspacesv1.WorkspaceDeployment) { w.Spec.Suspend = true })
	setSpec(t, holder, func(w *workspacesv1.WorkspaceDeployment) {
		w.Spec.Lifecycle = &workspacesv1.WorkspaceLifecycle{Stopped: true}
	})
	g.Eventually(func(g Gomega) {
		got := get(g, younger)
		g.Expect(got.Status.Phase).To(Equal(workspacesv1.PhaseRunning), "the younger waiter runs: %s", got.Status.Message)
	}, timeout, 500*time.Millisecond).Should(Succeed())
	got := get(g, older)
	g.Expect(got.Status.Phase).NotTo(Equal(workspacesv1.PhaseWaiting), "the suspended waiter left the queue: %s", got.Status.Message)
	g.Expect(got.Status.Admission).To(BeNil(), "the suspended waiter claimed nothing")
}

// TestLifecycle9StoppedWorkloadsRunNoLongerThanTheBound: a workspace
// stopped while its release installs (Deploying) is Stopped; the
// Deployment the install in flight creates afterwards, and the same
// Deployment scaled up again later by the tenant, are scaled back to zero
// within stoppedBound of their pods appearing, with a StopReverted Warning.
func TestLifecycle9StoppedWorkloadsRunNoLongerThanTheBound(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := tenant(t, "stopinflight")
	tmpl := standin.NewServiceTemplate(ns, "hang", true, map[string]string{standin.AnnotationHang: "true"})
	g.Expect(standin.CreateWithStatus(ctx, env.Client, tmpl)).To(Succeed())
	cls := class(t, ns, func(c *workspacesv1.WorkspaceClass) { c.Spec.ServiceTemplate.Name = "hang" })
	w := workspace(ns, "stop-inflight", cls, "c1")
	create(t, w)
	world.EventuallyPhase(t, env.Client, w, workspacesv1.PhaseDeploying)
	setSpec(t, w, func(w *workspacesv1.WorkspaceDeployment) {
		w.Spec.Lifecycle = &workspacesv1.WorkspaceLifecycle{Stopped: true}
	})
	var stopped *workspacesv1.WorkspaceDeployment
	g.Eventually(func(g Gomega) {
		stopped = get(g, w)
		g.Expect(stopped.Status.Phase).To(Equal(workspacesv1.PhaseStopped), "message: %s", stopped.Status.Message)
		g.Expect(stopped.Status.Lifecycle.StoppedAt).NotTo(BeNil())
		g.Expect(stopped.Status.ServiceEntryName).NotTo(BeEmpty())
	}, timeout, 500*time.Millisecond).Should(Succeed())

	// The install in flight creates its Deployment, and the Deployment its pod.
	childNS := "ws-" + w.Name
	d := inflightDeployment(childNS, stopped.Status.ServiceEntryName)
	g.Expect(child.Client.Create(ctx, d)).To(Succeed())
	runPod(t, childNS, "inflight-1")
	start := time.Now()
	g.Eventually(func(g Gomega) {
		cur := &appsv1.Deployment{}
		g.Expect(child.Client.Get(ctx, client.ObjectKeyFromObject(d), cur)).To(Succeed())
		g.Expect(*cur.Spec.Replicas).To(BeZero(), "the install's Deployment is scaled away")
		g.Expect(cur.Annotations).To(HaveKeyWithValue(scaledown.ReplicasAnnotation, "1"))
		g.Expect(eventReasons(g, w)).To(ContainElement(workspacesv1.StopRevertedReason))
	}, stoppedBound, 250*time.Millisecond).Should(Succeed())
	t.Logf("the install's Deployment was scaled away %s after its pod appeared", time.Since(start).Round(time.Millisecond))

	// The tenant scales it up again.
	g.Eventually(func(g Gomega) {
		cur := &appsv1.Deployment{}
		g.Expect(child.Client.Get(ctx, client.ObjectKeyFromObject(d), cur)).To(Succeed())
		cur.Spec.Replicas = ptr.To[int32](2)
		g.Expect(child.Client.Update(ctx, cur)).To(Succeed())
	}, timeout, 250*time.Millisecond).Should(Succeed())
	runPod(t, childNS, "inflight-2")
	start = time.Now()
	g.Eventually(func(g Gomega) {
		cur := &appsv1.Deployment{}
		g.Expect(child.Client.Get(ctx, client.ObjectKeyFromObject(d), cur)).To(Succeed())
		g.Expect(*cur.Spec.Replicas).To(BeZero(), "scaled back")
		g.Expect(cur.Annotations).To(HaveKeyWithValue(scaledown.ReplicasAnnotation, "1"), "the count saved first is kept")
	}, stoppedBound, 250*time.Millisecond).Should(Succeed())
	t.Logf("the scaled-up Deployment was scaled back %s after its pod appeared", time.Since(start).Round(time.Millisecond))
	got := get(g, w)
	g.Expect(got.Status.Phase).To(Equal(workspacesv1.PhaseStopped))
	g.Expect(got.Status.Admission).To(BeNil())
}

// hubClass creates a class of ns whose template installs a Deployment
// (standin.ChartWorkspaceHub).
func hubClass(t *testing.T, ns string, mutate func(*workspacesv1.WorkspaceClass)) string {
	t.Helper()
	tmpl := standin.NewServiceTemplate(ns, "hub", true, map[string]string{standin.AnnotationChart: standin.ChartWorkspaceHub})
	if err := standin.CreateWithStatus(context.Background(), env.Client, tmpl); err != nil {
		t.Fatal(err)
	}
	return class(t, ns, func(c *workspacesv1.WorkspaceClass) {
		c.Spec.ServiceTemplate.Name = "hub"
		if mutate != nil {
			mutate(c)
		}
	})
}

// setSpec changes a workspace's spec as its tenant would.
func setSpec(t *testing.T, w *workspacesv1.WorkspaceDeployment, mutate func(*workspacesv1.WorkspaceDeployment)) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		cur := get(g, w)
		mutate(cur)
		g.Expect(env.Client.Update(context.Background(), cur)).To(Succeed())
	}, timeout, 200*time.Millisecond).Should(Succeed())
}

// expectScaledAway checks that a stopped workspace's release runs nothing
// and that its live ServiceSet carries k0rdent's pause.
func expectScaledAway(g Gomega, w *workspacesv1.WorkspaceDeployment) {
	ctx := context.Background()
	list := &appsv1.DeploymentList{}
	g.Expect(child.Client.List(ctx, list, client.InNamespace("ws-"+w.Name))).To(Succeed())
	g.Expect(list.Items).NotTo(BeEmpty())
	for _, d := range list.Items {
		g.Expect(*d.Spec.Replicas).To(BeZero(), "Deployment %s", d.Name)
	}
	g.Expect(w.Status.Delivery).NotTo(BeNil())
	paused := 0
	for _, e := range w.Status.Delivery.Inventory.Entries {
		ss := &k0rdentv1beta1.ServiceSet{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: w.Namespace, Name: serviceSetNameOf(e.ID)}, ss); err == nil {
			g.Expect(ss.Annotations).To(HaveKeyWithValue(k0rdentv1beta1.ServiceSetPausedAnnotation, "true"))
			paused++
		}
	}
	g.Expect(paused).To(BeNumerically(">", 0), "a ServiceSet of the inventory is paused")
}

// serviceSetNameOf is the name in an inventory ID of a ServiceSet; ""
// for another kind.
func serviceSetNameOf(id string) string {
	oid, err := canon.ParseID(id)
	if err != nil || oid.Kind != "ServiceSet" || oid.Group != k0rdentv1beta1.GroupVersion.Group {
		return ""
	}
	return oid.Name
}

// inflightDeployment is a Deployment of a Helm release, as Helm creates it.
func inflightDeployment(namespace, release string) *appsv1.Deployment {
	labels := map[string]string{"app": "inflight"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "inflight", Labels: map[string]string{"app.kubernetes.io/managed-by": "Helm"},
			Annotations: map[string]string{"meta.helm.sh/release-name": release, "meta.helm.sh/release-namespace": namespace}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}},
	}
}

// runPod creates a running pod in a child namespace, as a ReplicaSet's
// would be (the child runs no controllers).
func runPod(t *testing.T, namespace, name string) {
	t.Helper()
	ctx := context.Background()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{"app": "inflight"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if err := child.Client.Create(ctx, p); err != nil {
		t.Fatalf("creating pod %s: %v", name, err)
	}
	p.Status.Phase = corev1.PodRunning
	if err := child.Client.Status().Update(ctx, p); err != nil {
		t.Fatalf("marking pod %s running: %v", name, err)
	}
	t.Cleanup(func() { _ = child.Client.Delete(context.Background(), p, client.GracePeriodSeconds(0)) })
}

// eventReasons lists the reasons of the events about a workspace.
func eventReasons(g Gomega, w *workspacesv1.WorkspaceDeployment) []string {
	list := &eventsv1.EventList{}
	g.Expect(env.Client.List(context.Background(), list, client.InNamespace(w.Namespace))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Name == w.Name && e.Regarding.Kind == "WorkspaceDeployment" {
			out = append(out, e.Reason)
		}
	}
	return out
}
