package controller_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	activityprobe "github.com/apiaryhq/apiary/internal/workspace/activity"
	"github.com/apiaryhq/apiary/internal/workspace/lifecycle"
	"github.com/apiaryhq/apiary/internal/workspace/scaledown"
	"github.com/apiaryhq/apiary/test/standin"
)

// clockSkew moves the workspace lifecycle's clock (lifecycleNow) ahead of
// real time; the tests of this package run one at a time.
var clockSkew atomic.Int64

// lifecycleNow is the manager's lifecycle clock in these tests.
func lifecycleNow() time.Time { return time.Now().Add(time.Duration(clockSkew.Load())) }

// skewClock moves the lifecycle clock d ahead until the test ends.
func skewClock(t *testing.T, d time.Duration) {
	clockSkew.Store(int64(d))
	t.Cleanup(func() { clockSkew.Store(0) })
}

// fakeActivity is the manager's activity source in these tests: it answers
// what a test set for a workspace (unknown otherwise) and counts the
// questions.
// The workspaces in probed are asked through probes, the production
// reader over a Prober whose sources hang until their timeout.
type fakeActivity struct {
	mu      sync.Mutex
	answers map[types.NamespacedName]lifecycle.Activity
	asked   map[types.NamespacedName]int
	probed  map[types.NamespacedName]bool
	probes  *activityprobe.Reader
}

var activity = &fakeActivity{answers: map[types.NamespacedName]lifecycle.Activity{}, asked: map[types.NamespacedName]int{},
	probed: map[types.NamespacedName]bool{}, probes: &activityprobe.Reader{Clock: suiteClock, Prober: &activityprobe.Prober{
		Sources: map[activityprobe.Format]activityprobe.Source{activityprobe.PrometheusGPU: hangingSource{}}, Timeout: 5 * time.Second}}}

func (f *fakeActivity) LastActivity(ctx context.Context, t lifecycle.ActivityTarget) lifecycle.Activity {
	f.mu.Lock()
	f.asked[t.Workspace]++
	probed, a := f.probed[t.Workspace], f.answers[t.Workspace]
	f.mu.Unlock()
	if probed {
		return f.probes.LastActivity(ctx, t)
	}
	return a
}

// Subscribe hands on the probing reader's answers, when it sends them.
func (f *fakeActivity) Subscribe() <-chan event.GenericEvent {
	if s, ok := any(f.probes).(interface {
		Subscribe() <-chan event.GenericEvent
	}); ok {
		return s.Subscribe()
	}
	return make(chan event.GenericEvent)
}

// probe makes a workspace's activity asked through the hanging probes.
func (f *fakeActivity) probe(key types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.probed[key] = true
}

// hangingSource is a tenant's endpoint that answers nothing until the
// probe's timeout.
type hangingSource struct{}

func (hangingSource) Observe(ctx context.Context, _ activityprobe.Target, _ time.Time) (activityprobe.Observation, error) {
	<-ctx.Done()
	return activityprobe.Observation{}, ctx.Err()
}

func (f *fakeActivity) set(key types.NamespacedName, a lifecycle.Activity) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers[key] = a
}

func (f *fakeActivity) askedFor(key types.NamespacedName) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.asked[key]
}

// hubClass creates a class whose ServiceTemplate installs the stand-in's
// chart shaped like the workspace hub's (a Deployment pinned to one
// replica, a volume claim named after the release).
func hubClass(t *testing.T, ns, name string, mutate func(*workspacesv1.WorkspaceClass)) *workspacesv1.WorkspaceClass {
	t.Helper()
	serviceTemplate(t, ns, name+"-tmpl", map[string]string{standin.AnnotationChart: standin.ChartWorkspaceHub})
	return workspaceClass(t, name+"-"+ns, ns, name+"-tmpl", mutate)
}

// updateWorkspace changes a workspace's spec or metadata, retrying on conflicts.
func updateWorkspace(t *testing.T, key client.ObjectKey, mutate func(*workspacesv1.WorkspaceDeployment)) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		w := &workspacesv1.WorkspaceDeployment{}
		if err := env.Client.Get(context.Background(), key, w); err != nil {
			return err
		}
		mutate(w)
		return env.Client.Update(context.Background(), w)
	}, timeout, 100*time.Millisecond).Should(Succeed())
}

// setStopped asks for a workspace to be stopped, or started again.
func setStopped(t *testing.T, key client.ObjectKey, stopped bool) {
	t.Helper()
	updateWorkspace(t, key, func(w *workspacesv1.WorkspaceDeployment) {
		if w.Spec.Lifecycle == nil {
			w.Spec.Lifecycle = &workspacesv1.WorkspaceLifecycle{}
		}
		w.Spec.Lifecycle.Stopped = stopped
	})
}

// poke asks for a reconcile, as `flux reconcile` does, so that a skewed
// clock is read at once.
func poke(t *testing.T, key client.ObjectKey) {
	t.Helper()
	updateWorkspace(t, key, func(w *workspacesv1.WorkspaceDeployment) {
		if w.Annotations == nil {
			w.Annotations = map[string]string{}
		}
		w.Annotations[meta.ReconcileRequestAnnotation] = time.Now().Format(time.RFC3339Nano)
	})
}

// eventuallyStopped waits until a workspace finished stopping and reads
// as users see a stopped one.
func eventuallyStopped(t *testing.T, key client.ObjectKey) *workspacesv1.WorkspaceDeployment {
	t.Helper()
	var w *workspacesv1.WorkspaceDeployment
	NewWithT(t).Eventually(func(g Gomega) {
		w = getWorkspace(g, key)
		g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseStopped), "message: %s", w.Status.Message)
		g.Expect(w.Status.Lifecycle).NotTo(BeNil())
		g.Expect(w.Status.Lifecycle.StoppedAt).NotTo(BeNil())
		ready := condition(w, commonv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "the state the spec asks for")
		g.Expect(ready.Reason).To(Equal(workspacesv1.StoppedReason))
		g.Expect(condition(w, commonv1.ReconcilingCondition)).To(BeNil(), "stopped is a desired state, not progress")
		g.Expect(condition(w, commonv1.StalledCondition)).To(BeNil())
		g.Expect(w.Status.ObservedGeneration).To(Equal(w.Generation))
	}, timeout, 200*time.Millisecond).Should(Succeed())
	return w
}

// hubRelease is what the hub-shaped chart made of a workspace on the child.
type hubRelease struct {
	deployment *appsv1.Deployment
	pvc        *corev1.PersistentVolumeClaim
	namespace  *corev1.Namespace
}

func readHubRelease(g Gomega, w *workspacesv1.WorkspaceDeployment) hubRelease {
	ctx := context.Background()
	ns, release := "ws-"+w.Name, "wsd-"+w.Spec.ClusterDeploymentRef.Name+"-"+w.Name
	out := hubRelease{deployment: &appsv1.Deployment{}, pvc: &corev1.PersistentVolumeClaim{}, namespace: &corev1.Namespace{}}
	g.Expect(childClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: release}, out.deployment)).To(Succeed())
	g.Expect(childClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: release}, out.pvc)).To(Succeed())
	g.Expect(childClient.Get(ctx, client.ObjectKey{Name: ns}, out.namespace)).To(Succeed())
	return out
}

// expectScaledAway checks that a stopped workspace's Deployment is at zero
// with its replicas saved, and that its ServiceSet carries k0rdent's pause.
func expectScaledAway(g Gomega, w *workspacesv1.WorkspaceDeployment) {
	rel := readHubRelease(g, w)
	g.Expect(*rel.deployment.Spec.Replicas).To(BeZero())
	g.Expect(rel.deployment.Annotations).To(HaveKeyWithValue(scaledown.ReplicasAnnotation, "1"))
	g.Expect(serviceSetOf(g, w).Annotations).To(HaveKey(k0rdentv1beta1.ServiceSetPausedAnnotation))
}

// counterValue sums an Apiary counter over the series whose labels carry
// the given values.
func counterValue(name string, labels map[string]string) float64 {
	families, _ := ctrlmetrics.Registry.Gather()
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			for k, v := range labels {
				if labelValue(m, k) != v {
					continue series
				}
			}
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}
