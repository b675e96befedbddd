package controller_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/workspace/lifecycle"
	"github.com/apiaryhq/apiary/internal/workspace/scaledown"
	"github.com/apiaryhq/apiary/test/standin"
)

// TestWorkspaceStopGivesBackGPUsAndQuotaAndStartQueuesAgain: a node with
// one GPU and a quota of one workspace; the second workspace waits. Stopping
// the first scales its Deployment to zero under a paused ServiceSet, keeps
// its namespace and volume claim, and gives back its GPU and its quota
// charge, so the waiting one runs. Starting the first queues it behind the
// one now running; once that goes, it runs again on the same namespace and
// volume claim.
func TestWorkspaceStopGivesBackGPUsAndQuotaAndStartQueuesAgain(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "stop")
	nsObj := &corev1.Namespace{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: ns}, nsObj)).To(Succeed())
	nsObj.Labels = map[string]string{"tenant": ns}
	g.Expect(env.Client.Update(ctx, nsObj)).To(Succeed())
	readyCluster(t, ns, "c1")
	class := hubClass(t, ns, "hub", nil)
	model := "L4-" + ns
	g.Expect(standin.AddGPUNode(ctx, childClient, ns+"-l4", map[string]string{"exalsius.ai/gpu-model": model}, "nvidia.com/gpu", 1)).To(Succeed())
	q := &quotav1alpha1.TenantQuota{ObjectMeta: metav1.ObjectMeta{Name: ns}, Spec: quotav1alpha1.TenantQuotaSpec{
		NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tenant": ns}},
		Hard: quotav1alpha1.QuotaLimits{Workspaces: ptr.To[int64](2),
			GPUs: []quotav1alpha1.GPULimit{{Name: "all", ResourceName: "nvidia.com/gpu", Count: 1}}},
	}}
	g.Expect(env.Client.Create(ctx, q)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), q) })

	keyA := createWorkspace(t, gpuWorkspace(ns, uniq(ns, "a"), class.Name, "c1", model, 1))
	running := eventuallyRunning(t, keyA)
	var before hubRelease
	g.Eventually(func(g Gomega) { before = readHubRelease(g, running) }, timeout, 200*time.Millisecond).Should(Succeed())
	g.Expect(*before.deployment.Spec.Replicas).To(BeEquivalentTo(1))
	var runningSpec k0rdentv1beta1.ServiceSetSpec
	g.Eventually(func(g Gomega) {
		runningSpec = serviceSetOf(g, running).Spec
		g.Expect(runningSpec.Services).To(HaveLen(1))
		g.Expect(runningSpec.Services[0].Values).To(ContainSubstring(`"gpuVendor":"NVIDIA"`))
	}, timeout, 200*time.Millisecond).Should(Succeed())
	time.Sleep(1100 * time.Millisecond) // a later creation timestamp
	keyB := createWorkspace(t, gpuWorkspace(ns, uniq(ns, "b"), class.Name, "c1", model, 1))
	eventuallyPhase(t, keyB, workspacesv1.PhaseWaiting)

	given := map[string]string{"cluster_deployment": ns + "/c1", "resource": "nvidia.com/gpu", "reason": "Requested"}
	givenBefore := counterValue("apiary_gpus_released_by_stop_total", given)
	setStopped(t, keyA, true)
	stopped := eventuallyStopped(t, keyA)
	g.Expect(counterValue("apiary_gpus_released_by_stop_total", given)-givenBefore).To(BeEquivalentTo(1), "one GPU given back")
	g.Expect(stopped.Status.Admission).To(BeNil(), "the GPU admission is given back")
	g.Expect(stopped.Status.Lifecycle.StopReason).To(Equal(workspacesv1.StopRequested))
	g.Expect(stopped.Status.Access).To(BeEmpty())
	g.Eventually(func(g Gomega) {
		expectScaledAway(g, stopped)
		rel := readHubRelease(g, stopped)
		g.Expect(rel.pvc.UID).To(Equal(before.pvc.UID), "the volume claim is kept")
		g.Expect(rel.namespace.UID).To(Equal(before.namespace.UID), "the namespace is kept")
		g.Expect(serviceSetOf(g, stopped).Spec).To(Equal(runningSpec), "the pause changes no value (the GPU vendor stays)")
	}, timeout, 200*time.Millisecond).Should(Succeed())
	eventuallyRunning(t, keyB)
	g.Eventually(func(g Gomega) {
		got := &quotav1alpha1.TenantQuota{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(q), got)).To(Succeed())
		g.Expect(got.Status.Charges).To(ConsistOf(
			And(HaveField("Name", keyB.Name), HaveField("GPUs", BeEquivalentTo(1))),
			And(HaveField("Name", keyA.Name), HaveField("GPUs", BeZero()))),
			"only the running workspace is charged GPUs; the stopped one keeps its place in the count")
		g.Expect(got.Status.Used.Workspaces).To(BeEquivalentTo(2))
	}, timeout, 200*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(eventReasons(g, ns, keyA.Name)).To(ContainElement(workspacesv1.StoppedReason))
	}, timeout, 200*time.Millisecond).Should(Succeed())
	kst, err := kstatusOf(stopped)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(kst.Status)).To(Equal("Current"), "kstatus reads a stopped workspace as Current")

	// Starting again queues it behind b, which runs now.
	setStopped(t, keyA, false)
	waiting := eventuallyPhase(t, keyA, workspacesv1.PhaseWaiting)
	g.Expect(waiting.Status.Lifecycle.QueuedAt).NotTo(BeNil())
	g.Expect(waiting.Status.Lifecycle.QueuedAt.After(running.CreationTimestamp.Time)).To(BeTrue(), "queued from the start, not the creation")
	g.Consistently(func(g Gomega) {
		g.Expect(*readHubRelease(g, waiting).deployment.Spec.Replicas).To(BeZero(), "not scaled back before it is admitted")
	}, 2*time.Second, 200*time.Millisecond).Should(Succeed())

	deleteWorkspace(t, keyB)
	again := eventuallyRunning(t, keyA)
	g.Expect(again.Status.Admission).NotTo(BeNil())
	g.Expect(again.Status.Lifecycle.StoppedAt).To(BeNil())
	g.Eventually(func(g Gomega) {
		rel := readHubRelease(g, again)
		g.Expect(*rel.deployment.Spec.Replicas).To(BeEquivalentTo(1))
		g.Expect(rel.deployment.Annotations).NotTo(HaveKey(scaledown.ReplicasAnnotation))
		g.Expect(rel.pvc.UID).To(Equal(before.pvc.UID), "the same volume claim")
		g.Expect(rel.namespace.UID).To(Equal(before.namespace.UID), "the same namespace")
		g.Expect(serviceSetOf(g, again).Annotations).NotTo(HaveKey(k0rdentv1beta1.ServiceSetPausedAnnotation))
	}, timeout, 200*time.Millisecond).Should(Succeed())
}

// TestWorkspaceStartQueuesFromTheTimeItAsks: of two stopped workspaces,
// the one that asks to start first runs first, though it is the younger.
func TestWorkspaceStartQueuesFromTheTimeItAsks(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "startq")
	readyCluster(t, ns, "c1")
	class := hubClass(t, ns, "hub", nil)
	model := "T4-" + ns
	g.Expect(standin.AddGPUNode(ctx, childClient, ns+"-t4", map[string]string{"exalsius.ai/gpu-model": model}, "nvidia.com/gpu", 1)).To(Succeed())

	keyOld := createWorkspace(t, gpuWorkspace(ns, uniq(ns, "old"), class.Name, "c1", model, 1))
	eventuallyRunning(t, keyOld)
	setStopped(t, keyOld, true)
	eventuallyStopped(t, keyOld)
	time.Sleep(1100 * time.Millisecond)
	keyYoung := createWorkspace(t, gpuWorkspace(ns, uniq(ns, "young"), class.Name, "c1", model, 1))
	eventuallyRunning(t, keyYoung)
	setStopped(t, keyYoung, true)
	eventuallyStopped(t, keyYoung)
	keyHolder := createWorkspace(t, gpuWorkspace(ns, uniq(ns, "holder"), class.Name, "c1", model, 1))
	eventuallyRunning(t, keyHolder)

	setStopped(t, keyYoung, false)
	eventuallyPhase(t, keyYoung, workspacesv1.PhaseWaiting)
	time.Sleep(1100 * time.Millisecond)
	setStopped(t, keyOld, false)
	eventuallyPhase(t, keyOld, workspacesv1.PhaseWaiting)

	deleteWorkspace(t, keyHolder)
	eventuallyRunning(t, keyYoung)
	g.Consistently(func(g Gomega) {
		g.Expect(getWorkspace(g, keyOld).Status.Phase).To(Equal(workspacesv1.PhaseWaiting))
	}, 2*time.Second, 200*time.Millisecond).Should(Succeed(), "the one that asked later waits")
}

// TestWorkspaceStopWithdrawsURLsAndStartGivesThemBack: a stopped
// workspace's routes are gone and its pool port free; started again, it
// gets the same host name and, still free, the same port, else another.
func TestWorkspaceStopWithdrawsURLsAndStartGivesThemBack(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "stop-urls")
	regionalSetup(t, ns, "c1")
	class := accessClass(t, ns, "devbox", endpoint("web", protoHTTP, 8080), endpoint("ssh", protoSSH, 22))
	name := "s-" + ns[len(ns)-5:]
	key := createWorkspace(t, workspace(ns, name, class.Name, "c1"))
	eventuallyRunning(t, key)
	var web, ssh string
	var ports []workspacesv1.PortAssignment
	g.Eventually(func(g Gomega) {
		w := getWorkspace(g, key)
		web, ssh = accessEntry(g, w, "web").URL, accessEntry(g, w, "ssh").URL
		g.Expect(web).NotTo(BeEmpty())
		g.Expect(ssh).NotTo(BeEmpty())
		ports = w.Status.Routes.Ports
	}, timeout, 200*time.Millisecond).Should(Succeed())

	setStopped(t, key, true)
	w := eventuallyStopped(t, key)
	g.Expect(w.Status.Routes).To(BeNil())
	g.Expect(w.Status.Lifecycle.Ports).To(Equal(ports), "the ports it held are remembered")
	g.Expect(apierrors.IsNotFound(regionalClient(t).Get(ctx, client.ObjectKey{Namespace: "ws-" + name, Name: "ssh"},
		&gatewayv1.TCPRoute{}))).To(BeTrue(), "the TCPRoute is withdrawn")

	setStopped(t, key, false)
	eventuallyRunning(t, key)
	g.Eventually(func(g Gomega) {
		w := getWorkspace(g, key)
		g.Expect(accessEntry(g, w, "web").URL).To(Equal(web), "the same host name")
		g.Expect(accessEntry(g, w, "ssh").URL).To(Equal(ssh), "the same port")
	}, timeout, 200*time.Millisecond).Should(Succeed())

	// Taken meanwhile: a new workspace gets the freed port (the pool's
	// lowest); started again, the stopped one gets another.
	g.Expect(ssh).To(Equal(fmt.Sprintf("ssh://%s:%d", tenantDomain, poolPort0)), "alone, it held the lowest port")
	setStopped(t, key, true)
	eventuallyStopped(t, key)
	keyTaker := createWorkspace(t, workspace(ns, uniq(ns, "taker"), class.Name, "c1"))
	eventuallyRunning(t, keyTaker)
	g.Eventually(func(g Gomega) {
		g.Expect(accessEntry(g, getWorkspace(g, keyTaker), "ssh").URL).To(Equal(ssh))
	}, timeout, 200*time.Millisecond).Should(Succeed())
	setStopped(t, key, false)
	eventuallyRunning(t, key)
	g.Eventually(func(g Gomega) {
		w := getWorkspace(g, key)
		g.Expect(accessEntry(g, w, "web").URL).To(Equal(web))
		g.Expect(accessEntry(g, w, "ssh").URL).To(Equal(fmt.Sprintf("ssh://%s:%d", tenantDomain, poolPort1)), "the port left")
	}, timeout, 200*time.Millisecond).Should(Succeed())

	// The lowest port free again, a restart still asks for the one it held.
	deleteWorkspace(t, keyTaker)
	setStopped(t, key, true)
	eventuallyStopped(t, key)
	setStopped(t, key, false)
	eventuallyRunning(t, key)
	g.Eventually(func(g Gomega) {
		g.Expect(accessEntry(g, getWorkspace(g, key), "ssh").URL).To(Equal(fmt.Sprintf("ssh://%s:%d", tenantDomain, poolPort1)),
			"the port it held, not the lowest free one")
	}, timeout, 200*time.Millisecond).Should(Succeed())
}

// TestWorkspaceDeletedWhileStopped: a stopped workspace scales away what a
// Helm upgrade brings back; deleting it lifts
// k0rdent's pause first (a paused profile never runs its deletion), so the
// release, its volume claim and the ServiceSet go.
func TestWorkspaceDeletedWhileStopped(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "stopdel")
	readyCluster(t, ns, "c1")
	class := hubClass(t, ns, "hub", nil)
	key := createWorkspace(t, workspace(ns, uniq(ns, "gone"), class.Name, "c1"))
	eventuallyRunning(t, key)
	setStopped(t, key, true)
	w := eventuallyStopped(t, key)

	// A Helm upgrade would reset the pinned replicas: a stopped workspace
	// scales them away again at its next reconcile, with a Warning.
	g.Eventually(func(g Gomega) {
		d := readHubRelease(g, w).deployment
		d.Spec.Replicas = ptr.To[int32](1)
		g.Expect(childClient.Update(ctx, d)).To(Succeed())
	}, timeout, 200*time.Millisecond).Should(Succeed())
	poke(t, key)
	g.Eventually(func(g Gomega) {
		g.Expect(*readHubRelease(g, w).deployment.Spec.Replicas).To(BeZero())
		g.Expect(readHubRelease(g, w).deployment.Annotations).To(HaveKeyWithValue(scaledown.ReplicasAnnotation, "1"))
		g.Expect(eventReasons(g, ns, key.Name)).To(ContainElement(workspacesv1.StopRevertedReason))
	}, timeout, 200*time.Millisecond).Should(Succeed())

	deleteWorkspace(t, key)
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "wsd-c1-" + key.Name}, &k0rdentv1beta1.ServiceSet{}))
	}, timeout, 200*time.Millisecond).Should(BeTrue())
	g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseStopped))
}

// TestWorkspaceExpiry: a class bounds its workspaces' life; before expiry
// they are warned, at expiry stopped or deleted per the class's policy.
func TestWorkspaceExpiry(t *testing.T) {
	for _, policy := range []workspacesv1.ExpiryPolicy{workspacesv1.ExpiryStop, workspacesv1.ExpiryDelete} {
		t.Run(string(policy), func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			ns := env.NewNamespace(t, "expiry")
			readyCluster(t, ns, "c1")
			class := hubClass(t, ns, "hub", func(c *workspacesv1.WorkspaceClass) {
				c.Spec.Lifecycle = &workspacesv1.ClassLifecycle{MaxLifetime: &metav1.Duration{Duration: time.Hour},
					ExpiryPolicy: policy, ExpiryWarning: &metav1.Duration{Duration: 10 * time.Minute}}
			})
			name := uniq(ns, "brief-"+strings.ToLower(string(policy)))
			key := createWorkspace(t, workspace(ns, name, class.Name, "c1"))
			w := eventuallyRunning(t, key)
			g.Expect(w.Status.Lifecycle.ExpiresAt.Time).To(BeTemporally("==", w.CreationTimestamp.Add(time.Hour)))
			g.Expect(condition(w, workspacesv1.ExpiresSoonCondition)).To(BeNil())

			skewClock(t, 55*time.Minute)
			poke(t, key)
			g.Eventually(func(g Gomega) {
				w := getWorkspace(g, key)
				c := condition(w, workspacesv1.ExpiresSoonCondition)
				g.Expect(c).NotTo(BeNil())
				g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
				g.Expect(eventReasons(g, ns, name)).To(ContainElement(workspacesv1.ExpiresSoonReason))
				g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseRunning))
			}, timeout, 200*time.Millisecond).Should(Succeed())

			expired := map[string]string{"policy": string(policy)}
			expiredBefore := counterValue("apiary_workspace_expirations_total", expired)
			skewClock(t, 61*time.Minute)
			poke(t, key)
			g.Eventually(func() float64 {
				return counterValue("apiary_workspace_expirations_total", expired) - expiredBefore
			}, timeout, 200*time.Millisecond).Should(BeEquivalentTo(1))
			if policy == workspacesv1.ExpiryDelete {
				g.Eventually(func() bool {
					return apierrors.IsNotFound(env.Client.Get(ctx, key, &workspacesv1.WorkspaceDeployment{}))
				}, timeout, 200*time.Millisecond).Should(BeTrue(), "the expired workspace is deleted")
				return
			}
			w = eventuallyStopped(t, key)
			g.Expect(w.Status.Lifecycle.StopReason).To(Equal(workspacesv1.StopExpired))
			// Starting does not help an expired workspace: it stays stopped.
			setStopped(t, key, false)
			g.Consistently(func(g Gomega) {
				g.Expect(getWorkspace(g, key).Status.Phase).To(Equal(workspacesv1.PhaseStopped))
			}, 2*time.Second, 200*time.Millisecond).Should(Succeed())
		})
	}
}

// TestWorkspaceIdleCulling: a class stops workspaces idle for an hour that
// ran two; an unknown activity never culls; a class without a policy is
// never asked about.
func TestWorkspaceIdleCulling(t *testing.T) {
	g := NewWithT(t)
	ns := env.NewNamespace(t, "idle")
	readyCluster(t, ns, "c1")
	idle := hubClass(t, ns, "idle", func(c *workspacesv1.WorkspaceClass) {
		c.Spec.Lifecycle = &workspacesv1.ClassLifecycle{Idle: &workspacesv1.IdlePolicy{
			After: metav1.Duration{Duration: time.Hour}, MinRuntime: &metav1.Duration{Duration: 2 * time.Hour},
			Source: workspacesv1.ActivitySource{Prometheus: &workspacesv1.PrometheusActivity{}}}}
	})
	plain := hubClass(t, ns, "plain", nil)
	keySleepy := createWorkspace(t, workspace(ns, uniq(ns, "sleepy"), idle.Name, "c1"))
	keyUnknown := createWorkspace(t, workspace(ns, uniq(ns, "unknown"), idle.Name, "c1"))
	keyPlain := createWorkspace(t, workspace(ns, uniq(ns, "plain"), plain.Name, "c1"))
	for _, k := range []client.ObjectKey{keySleepy, keyUnknown, keyPlain} {
		eventuallyRunning(t, k)
	}
	started := getWorkspace(g, keySleepy).Status.Lifecycle.RunningSince.Time
	activity.set(keySleepy, lifecycle.Activity{Known: true, Last: started})

	// Idle for 90 minutes, but ran only 90: kept.
	skewClock(t, 90*time.Minute)
	for _, k := range []client.ObjectKey{keySleepy, keyUnknown, keyPlain} {
		poke(t, k)
	}
	g.Eventually(func() int { return activity.askedFor(keySleepy) }, timeout, 100*time.Millisecond).Should(BeNumerically(">=", 1))
	g.Consistently(func(g Gomega) {
		g.Expect(getWorkspace(g, keySleepy).Status.Phase).To(Equal(workspacesv1.PhaseRunning))
	}, time.Second, 200*time.Millisecond).Should(Succeed(), "minRuntime not reached")

	// Three hours in, idle since the start: culled; the unknown one is kept.
	culls := counterValue("apiary_workspace_stops_total", map[string]string{"reason": "Idle"})
	skewClock(t, 3*time.Hour)
	for _, k := range []client.ObjectKey{keySleepy, keyUnknown, keyPlain} {
		poke(t, k)
	}
	w := eventuallyStopped(t, keySleepy)
	g.Expect(w.Status.Lifecycle.StopReason).To(Equal(workspacesv1.StopIdle))
	g.Expect(w.Spec.Lifecycle.Stopped).To(BeTrue(), "starting it again is the user's")
	g.Expect(counterValue("apiary_workspace_stops_total", map[string]string{"reason": "Idle"}) - culls).To(BeEquivalentTo(1))
	g.Eventually(func(g Gomega) {
		g.Expect(eventReasons(g, ns, keySleepy.Name)).To(ContainElement(workspacesv1.IdleCulledReason))
	}, timeout, 200*time.Millisecond).Should(Succeed())
	g.Eventually(func() int { return activity.askedFor(keyUnknown) }, timeout, 100*time.Millisecond).Should(BeNumerically(">=", 2))
	g.Expect(getWorkspace(g, keyUnknown).Status.Phase).To(Equal(workspacesv1.PhaseRunning), "an unknown activity never culls")
	g.Expect(activity.askedFor(keyPlain)).To(BeZero(), "a class without an idle policy costs no probe")
}

// uniq names a workspace after the test's namespace: envtest never
// finishes deleting a namespace, so a child namespace ws-<name> of a deleted
// workspace stays Terminating and must not be another test's.
func uniq(ns, base string) string { return base + "-" + ns[len(ns)-5:] }
