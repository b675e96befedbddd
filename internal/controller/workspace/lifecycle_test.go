package workspace_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/controllertest"
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
	ns := controllertest.Env.NewNamespace(t, "stop")
	controllertest.ReadyCluster(t, ns, "c1")
	class := controllertest.HubClass(t, ns, "hub", nil)
	model, q := gpuTenant(t, ns, "L4", 1, quotav1alpha1.QuotaLimits{Workspaces: ptr.To[int64](2),
		GPUs: []quotav1alpha1.GPULimit{{Name: "all", ResourceName: "nvidia.com/gpu", Count: 1}}})

	keyA := controllertest.CreateWorkspace(t, gpuWorkspace(ns, uniq(ns, "a"), class.Name, "c1", model, 1))
	running := controllertest.EventuallyRunning(t, keyA)
	var before controllertest.HubRelease
	g.Eventually(func(g Gomega) { before = controllertest.ReadHubRelease(g, running) }, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
	g.Expect(*before.Deployment.Spec.Replicas).To(BeEquivalentTo(1))
	var runningSpec k0rdentv1beta1.ServiceSetSpec
	g.Eventually(func(g Gomega) {
		runningSpec = controllertest.ServiceSetOf(g, running).Spec
		g.Expect(runningSpec.Services).To(HaveLen(1))
		g.Expect(runningSpec.Services[0].Values).To(ContainSubstring(`"gpuVendor":"NVIDIA"`))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
	time.Sleep(1100 * time.Millisecond) // a later creation timestamp
	keyB := controllertest.CreateWorkspace(t, gpuWorkspace(ns, uniq(ns, "b"), class.Name, "c1", model, 1))
	controllertest.EventuallyPhase(t, keyB, workspacesv1.PhaseWaiting)

	given := map[string]string{"cluster_deployment": ns + "/c1", "resource": "nvidia.com/gpu", "reason": "Requested"}
	givenBefore := controllertest.CounterValue("apiary_gpus_released_by_stop_total", given)
	controllertest.SetStopped(t, keyA, true)
	stopped := controllertest.EventuallyStopped(t, keyA)
	g.Expect(controllertest.CounterValue("apiary_gpus_released_by_stop_total", given)-givenBefore).To(BeEquivalentTo(1), "one GPU given back")
	g.Expect(stopped.Status.Admission).To(BeNil(), "the GPU admission is given back")
	g.Expect(stopped.Status.Lifecycle.StopReason).To(Equal(workspacesv1.StopRequested))
	g.Expect(stopped.Status.Access).To(BeEmpty())
	g.Eventually(func(g Gomega) {
		controllertest.ExpectScaledAway(g, stopped)
		rel := controllertest.ReadHubRelease(g, stopped)
		g.Expect(rel.PVC.UID).To(Equal(before.PVC.UID), "the volume claim is kept")
		g.Expect(rel.Namespace.UID).To(Equal(before.Namespace.UID), "the namespace is kept")
		g.Expect(controllertest.ServiceSetOf(g, stopped).Spec).To(Equal(runningSpec), "the pause changes no value (the GPU vendor stays)")
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
	controllertest.EventuallyRunning(t, keyB)
	g.Eventually(func(g Gomega) {
		got := &quotav1alpha1.TenantQuota{}
		g.Expect(controllertest.Env.Client.Get(ctx, client.ObjectKeyFromObject(q), got)).To(Succeed())
		g.Expect(chargeOf(g, q.Name, keyB)).To(HaveField("GPUs", BeEquivalentTo(1)), "the running workspace is charged GPUs")
		g.Expect(chargeOf(g, q.Name, keyA)).To(And(Not(BeNil()), HaveField("GPUs", BeZero())),
			"the stopped one keeps its place in the count")
		g.Expect(got.Status.Used.Workspaces).To(BeEquivalentTo(2))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(eventReasons(g, ns, keyA.Name)).To(ContainElement(workspacesv1.StoppedReason))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
	kst, err := controllertest.KstatusOf(stopped)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(kst.Status)).To(Equal("Current"), "kstatus reads a stopped workspace as Current")

	// Starting again queues it behind b, which runs now.
	controllertest.SetStopped(t, keyA, false)
	waiting := controllertest.EventuallyPhase(t, keyA, workspacesv1.PhaseWaiting)
	g.Expect(waiting.Status.Lifecycle.QueuedAt).NotTo(BeNil())
	g.Expect(waiting.Status.Lifecycle.QueuedAt.After(running.CreationTimestamp.Time)).To(BeTrue(), "queued from the start, not the creation")
	g.Consistently(func(g Gomega) {
		g.Expect(*controllertest.ReadHubRelease(g, waiting).Deployment.Spec.Replicas).To(BeZero(), "not scaled back before it is admitted")
	}, 2*time.Second, 200*time.Millisecond).Should(Succeed())

	controllertest.DeleteWorkspace(t, keyB)
	again := controllertest.EventuallyRunning(t, keyA)
	g.Expect(again.Status.Admission).NotTo(BeNil())
	g.Expect(again.Status.Lifecycle.StoppedAt).To(BeNil())
	g.Eventually(func(g Gomega) {
		rel := controllertest.ReadHubRelease(g, again)
		g.Expect(*rel.Deployment.Spec.Replicas).To(BeEquivalentTo(1))
		g.Expect(rel.Deployment.Annotations).NotTo(HaveKey(scaledown.ReplicasAnnotation))
		g.Expect(rel.PVC.UID).To(Equal(before.PVC.UID), "the same volume claim")
		g.Expect(rel.Namespace.UID).To(Equal(before.Namespace.UID), "the same namespace")
		g.Expect(controllertest.ServiceSetOf(g, again).Annotations).NotTo(HaveKey(k0rdentv1beta1.ServiceSetPausedAnnotation))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
}

// TestWorkspaceStartQueuesFromTheTimeItAsks: of two stopped workspaces,
// the one that asks to start first runs first, though it is the younger.
func TestWorkspaceStartQueuesFromTheTimeItAsks(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "startq")
	controllertest.ReadyCluster(t, ns, "c1")
	class := controllertest.HubClass(t, ns, "hub", nil)
	model := "T4-" + ns
	g.Expect(standin.AddGPUNode(ctx, controllertest.ChildClient, ns+"-t4", map[string]string{"exalsius.ai/gpu-model": model}, "nvidia.com/gpu", 1)).To(Succeed())

	keyOld := controllertest.CreateWorkspace(t, gpuWorkspace(ns, uniq(ns, "old"), class.Name, "c1", model, 1))
	controllertest.EventuallyRunning(t, keyOld)
	controllertest.SetStopped(t, keyOld, true)
	controllertest.EventuallyStopped(t, keyOld)
	time.Sleep(1100 * time.Millisecond)
	keyYoung := controllertest.CreateWorkspace(t, gpuWorkspace(ns, uniq(ns, "young"), class.Name, "c1", model, 1))
	controllertest.EventuallyRunning(t, keyYoung)
	controllertest.SetStopped(t, keyYoung, true)
	controllertest.EventuallyStopped(t, keyYoung)
	keyHolder := controllertest.CreateWorkspace(t, gpuWorkspace(ns, uniq(ns, "holder"), class.Name, "c1", model, 1))
	controllertest.EventuallyRunning(t, keyHolder)

	controllertest.SetStopped(t, keyYoung, false)
	controllertest.EventuallyPhase(t, keyYoung, workspacesv1.PhaseWaiting)
	time.Sleep(1100 * time.Millisecond)
	controllertest.SetStopped(t, keyOld, false)
	controllertest.EventuallyPhase(t, keyOld, workspacesv1.PhaseWaiting)

	controllertest.DeleteWorkspace(t, keyHolder)
	controllertest.EventuallyRunning(t, keyYoung)
	g.Consistently(func(g Gomega) {
		g.Expect(controllertest.GetWorkspace(g, keyOld).Status.Phase).To(Equal(workspacesv1.PhaseWaiting))
	}, 2*time.Second, 200*time.Millisecond).Should(Succeed(), "the one that asked later waits")
}

// TestWorkspaceStopWithdrawsURLsAndStartGivesThemBack: a stopped
// workspace's routes are gone and its pool port free; started again, it
// gets the same host name and, still free, the same port, else another.
func TestWorkspaceStopWithdrawsURLsAndStartGivesThemBack(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "stop-urls")
	controllertest.RegionalSetup(t, ns, "c1")
	class := controllertest.AccessClass(t, ns, "devbox", controllertest.Endpoint("web", protoHTTP, 8080), controllertest.Endpoint("ssh", protoSSH, 22))
	name := "s-" + ns[len(ns)-5:]
	key := controllertest.CreateWorkspace(t, controllertest.NewWorkspace(ns, name, class.Name, "c1"))
	controllertest.EventuallyRunning(t, key)
	var web, ssh string
	var ports []workspacesv1.PortAssignment
	g.Eventually(func(g Gomega) {
		w := controllertest.GetWorkspace(g, key)
		web, ssh = controllertest.AccessEntry(g, w, "web").URL, controllertest.AccessEntry(g, w, "ssh").URL
		g.Expect(web).NotTo(BeEmpty())
		g.Expect(ssh).NotTo(BeEmpty())
		ports = w.Status.Routes.Ports
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())

	controllertest.SetStopped(t, key, true)
	w := controllertest.EventuallyStopped(t, key)
	g.Expect(w.Status.Routes).To(BeNil())
	g.Expect(w.Status.Lifecycle.Ports).To(Equal(ports), "the ports it held are remembered")
	g.Expect(apierrors.IsNotFound(controllertest.RegionalClient(t).Get(ctx, client.ObjectKey{Namespace: "ws-" + name, Name: "ssh"},
		&gatewayv1.TCPRoute{}))).To(BeTrue(), "the TCPRoute is withdrawn")

	controllertest.SetStopped(t, key, false)
	controllertest.EventuallyRunning(t, key)
	g.Eventually(func(g Gomega) {
		w := controllertest.GetWorkspace(g, key)
		g.Expect(controllertest.AccessEntry(g, w, "web").URL).To(Equal(web), "the same host name")
		g.Expect(controllertest.AccessEntry(g, w, "ssh").URL).To(Equal(ssh), "the same port")
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())

	// Taken meanwhile: a new workspace gets the freed port (the pool's
	// lowest); started again, the stopped one gets another.
	g.Expect(ssh).To(Equal(fmt.Sprintf("ssh://%s:%d", controllertest.TenantDomain, controllertest.PoolPort0)), "alone, it held the lowest port")
	controllertest.SetStopped(t, key, true)
	controllertest.EventuallyStopped(t, key)
	keyTaker := controllertest.CreateWorkspace(t, controllertest.NewWorkspace(ns, uniq(ns, "taker"), class.Name, "c1"))
	controllertest.EventuallyRunning(t, keyTaker)
	g.Eventually(func(g Gomega) {
		g.Expect(controllertest.AccessEntry(g, controllertest.GetWorkspace(g, keyTaker), "ssh").URL).To(Equal(ssh))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
	controllertest.SetStopped(t, key, false)
	controllertest.EventuallyRunning(t, key)
	g.Eventually(func(g Gomega) {
		w := controllertest.GetWorkspace(g, key)
		g.Expect(controllertest.AccessEntry(g, w, "web").URL).To(Equal(web))
		g.Expect(controllertest.AccessEntry(g, w, "ssh").URL).To(Equal(fmt.Sprintf("ssh://%s:%d", controllertest.TenantDomain, controllertest.PoolPort1)), "the port left")
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())

	// The lowest port free again, a restart still asks for the one it held.
	controllertest.DeleteWorkspace(t, keyTaker)
	controllertest.SetStopped(t, key, true)
	controllertest.EventuallyStopped(t, key)
	controllertest.SetStopped(t, key, false)
	controllertest.EventuallyRunning(t, key)
	g.Eventually(func(g Gomega) {
		g.Expect(controllertest.AccessEntry(g, controllertest.GetWorkspace(g, key), "ssh").URL).To(Equal(fmt.Sprintf("ssh://%s:%d", controllertest.TenantDomain, controllertest.PoolPort1)),
			"the port it held, not the lowest free one")
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
}

// TestWorkspaceDeletedWhileStopped: a stopped workspace scales away what a
// Helm upgrade brings back; deleting it lifts
// k0rdent's pause first (a paused profile never runs its deletion), so the
// release, its volume claim and the ServiceSet go.
func TestWorkspaceDeletedWhileStopped(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "stopdel")
	controllertest.ReadyCluster(t, ns, "c1")
	class := controllertest.HubClass(t, ns, "hub", nil)
	key := controllertest.CreateWorkspace(t, controllertest.NewWorkspace(ns, uniq(ns, "gone"), class.Name, "c1"))
	controllertest.EventuallyRunning(t, key)
	controllertest.SetStopped(t, key, true)
	w := controllertest.EventuallyStopped(t, key)

	// A Helm upgrade would reset the pinned replicas: a stopped workspace
	// scales them away again at its next reconcile, with a Warning.
	g.Eventually(func(g Gomega) {
		d := controllertest.ReadHubRelease(g, w).Deployment
		d.Spec.Replicas = ptr.To[int32](1)
		g.Expect(controllertest.ChildClient.Update(ctx, d)).To(Succeed())
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
	controllertest.Poke(t, key)
	g.Eventually(func(g Gomega) {
		g.Expect(*controllertest.ReadHubRelease(g, w).Deployment.Spec.Replicas).To(BeZero())
		g.Expect(controllertest.ReadHubRelease(g, w).Deployment.Annotations).To(HaveKeyWithValue(scaledown.ReplicasAnnotation, "1"))
		g.Expect(eventReasons(g, ns, key.Name)).To(ContainElement(workspacesv1.StopRevertedReason))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())

	controllertest.DeleteWorkspace(t, key)
	g.Eventually(func() bool {
		return apierrors.IsNotFound(controllertest.Env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "wsd-c1-" + key.Name}, &k0rdentv1beta1.ServiceSet{}))
	}, controllertest.Timeout, 200*time.Millisecond).Should(BeTrue())
	g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseStopped))
}

// TestWorkspaceExpiry: a class bounds its workspaces' life; before expiry
// they are warned, at expiry stopped or deleted per the class's policy.
func TestWorkspaceExpiry(t *testing.T) {
	for _, policy := range []workspacesv1.ExpiryPolicy{workspacesv1.ExpiryStop, workspacesv1.ExpiryDelete} {
		t.Run(string(policy), func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			ns := controllertest.Env.NewNamespace(t, "expiry")
			controllertest.ReadyCluster(t, ns, "c1")
			class := controllertest.HubClass(t, ns, "hub", func(c *workspacesv1.WorkspaceClass) {
				c.Spec.Lifecycle = &workspacesv1.ClassLifecycle{MaxLifetime: &metav1.Duration{Duration: time.Hour},
					ExpiryPolicy: policy, ExpiryWarning: &metav1.Duration{Duration: 10 * time.Minute}}
			})
			name := uniq(ns, "brief-"+strings.ToLower(string(policy)))
			key := controllertest.CreateWorkspace(t, controllertest.NewWorkspace(ns, name, class.Name, "c1"))
			w := controllertest.EventuallyRunning(t, key)
			g.Expect(w.Status.Lifecycle.ExpiresAt.Time).To(BeTemporally("==", w.CreationTimestamp.Add(time.Hour)))
			g.Expect(controllertest.Condition(w, workspacesv1.ExpiresSoonCondition)).To(BeNil())

			controllertest.SkewClock(t, 55*time.Minute)
			controllertest.Poke(t, key)
			g.Eventually(func(g Gomega) {
				w := controllertest.GetWorkspace(g, key)
				c := controllertest.Condition(w, workspacesv1.ExpiresSoonCondition)
				g.Expect(c).NotTo(BeNil())
				g.Expect(c.Status).To(Equal(metav1.ConditionTrue))
				g.Expect(eventReasons(g, ns, name)).To(ContainElement(workspacesv1.ExpiresSoonReason))
				g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseRunning))
			}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())

			expired := map[string]string{"policy": string(policy)}
			expiredBefore := controllertest.CounterValue("apiary_workspace_expirations_total", expired)
			controllertest.SkewClock(t, 61*time.Minute)
			controllertest.Poke(t, key)
			g.Eventually(func() float64 {
				return controllertest.CounterValue("apiary_workspace_expirations_total", expired) - expiredBefore
			}, controllertest.Timeout, 200*time.Millisecond).Should(BeEquivalentTo(1))
			if policy == workspacesv1.ExpiryDelete {
				g.Eventually(func() bool {
					return apierrors.IsNotFound(controllertest.Env.Client.Get(ctx, key, &workspacesv1.WorkspaceDeployment{}))
				}, controllertest.Timeout, 200*time.Millisecond).Should(BeTrue(), "the expired workspace is deleted")
				return
			}
			w = controllertest.EventuallyStopped(t, key)
			g.Expect(w.Status.Lifecycle.StopReason).To(Equal(workspacesv1.StopExpired))
			// Starting does not help an expired workspace: it stays stopped.
			controllertest.SetStopped(t, key, false)
			g.Consistently(func(g Gomega) {
				g.Expect(controllertest.GetWorkspace(g, key).Status.Phase).To(Equal(workspacesv1.PhaseStopped))
			}, 2*time.Second, 200*time.Millisecond).Should(Succeed())
		})
	}
}

// TestWorkspaceIdleCulling: a class stops workspaces idle for an hour that
// ran two; an unknown activity never culls; a class without a policy is
// never asked about.
func TestWorkspaceIdleCulling(t *testing.T) {
	g := NewWithT(t)
	ns := controllertest.Env.NewNamespace(t, "idle")
	controllertest.ReadyCluster(t, ns, "c1")
	idle := controllertest.HubClass(t, ns, "idle", func(c *workspacesv1.WorkspaceClass) {
		c.Spec.Lifecycle = &workspacesv1.ClassLifecycle{Idle: &workspacesv1.IdlePolicy{
			After: metav1.Duration{Duration: time.Hour}, MinRuntime: &metav1.Duration{Duration: 2 * time.Hour},
			Source: workspacesv1.ActivitySource{Prometheus: &workspacesv1.PrometheusActivity{}}}}
	})
	plain := controllertest.HubClass(t, ns, "plain", nil)
	keySleepy := controllertest.CreateWorkspace(t, controllertest.NewWorkspace(ns, uniq(ns, "sleepy"), idle.Name, "c1"))
	keyUnknown := controllertest.CreateWorkspace(t, controllertest.NewWorkspace(ns, uniq(ns, "unknown"), idle.Name, "c1"))
	keyPlain := controllertest.CreateWorkspace(t, controllertest.NewWorkspace(ns, uniq(ns, "plain"), plain.Name, "c1"))
	for _, k := range []client.ObjectKey{keySleepy, keyUnknown, keyPlain} {
		controllertest.EventuallyRunning(t, k)
	}
	started := controllertest.GetWorkspace(g, keySleepy).Status.Lifecycle.RunningSince.Time
	controllertest.Activity.Set(keySleepy, lifecycle.Activity{Known: true, Last: started})

	// Idle for 90 minutes, but ran only 90: kept.
	controllertest.SkewClock(t, 90*time.Minute)
	for _, k := range []client.ObjectKey{keySleepy, keyUnknown, keyPlain} {
		controllertest.Poke(t, k)
	}
	g.Eventually(func() int { return controllertest.Activity.AskedFor(keySleepy) }, controllertest.Timeout, 100*time.Millisecond).Should(BeNumerically(">=", 1))
	g.Consistently(func(g Gomega) {
		g.Expect(controllertest.GetWorkspace(g, keySleepy).Status.Phase).To(Equal(workspacesv1.PhaseRunning))
	}, time.Second, 200*time.Millisecond).Should(Succeed(), "minRuntime not reached")

	// Three hours in, idle since the start: culled; the unknown one is kept.
	culls := controllertest.CounterValue("apiary_workspace_stops_total", map[string]string{"reason": "Idle"})
	controllertest.SkewClock(t, 3*time.Hour)
	for _, k := range []client.ObjectKey{keySleepy, keyUnknown, keyPlain} {
		controllertest.Poke(t, k)
	}
	w := controllertest.EventuallyStopped(t, keySleepy)
	g.Expect(w.Status.Lifecycle.StopReason).To(Equal(workspacesv1.StopIdle))
	g.Expect(w.Spec.Lifecycle.Stopped).To(BeTrue(), "starting it again is the user's")
	g.Expect(controllertest.CounterValue("apiary_workspace_stops_total", map[string]string{"reason": "Idle"}) - culls).To(BeEquivalentTo(1))
	g.Eventually(func(g Gomega) {
		g.Expect(eventReasons(g, ns, keySleepy.Name)).To(ContainElement(workspacesv1.IdleCulledReason))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
	g.Eventually(func() int { return controllertest.Activity.AskedFor(keyUnknown) }, controllertest.Timeout, 100*time.Millisecond).Should(BeNumerically(">=", 2))
	g.Expect(controllertest.GetWorkspace(g, keyUnknown).Status.Phase).To(Equal(workspacesv1.PhaseRunning), "an unknown activity never culls")
	g.Expect(controllertest.Activity.AskedFor(keyPlain)).To(BeZero(), "a class without an idle policy costs no probe")
}

// uniq names a workspace after the test's namespace: envtest never
// finishes deleting a namespace, so a child namespace ws-<name> of a deleted
// workspace stays Terminating and must not be another test's.
func uniq(ns, base string) string { return base + "-" + ns[len(ns)-5:] }
