package controllertest

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
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
// real time; the tests of a suite run one at a time, each suite in its own
// test binary with its own manager.
var clockSkew atomic.Int64

// lifecycleNow is the manager's lifecycle clock in these tests.
func lifecycleNow() time.Time { return time.Now().Add(time.Duration(clockSkew.Load())) }

// SkewClock moves the lifecycle clock d ahead until the test ends.
func SkewClock(t *testing.T, d time.Duration) {
	clockSkew.Store(int64(d))
	t.Cleanup(func() { clockSkew.Store(0) })
}

// FakeActivity is the manager's activity source in these tests: it answers
// what a test set for a workspace (unknown otherwise) and counts the
// questions.
// The workspaces in probed are asked through probes, the production
// reader over a Prober whose sources hang until their timeout.
type FakeActivity struct {
	mu      sync.Mutex
	answers map[types.NamespacedName]lifecycle.Activity
	asked   map[types.NamespacedName]int
	probed  map[types.NamespacedName]bool
	Probes  *activityprobe.Reader
}

// Activity is the activity source of the manager Main starts.
var Activity = &FakeActivity{answers: map[types.NamespacedName]lifecycle.Activity{}, asked: map[types.NamespacedName]int{},
	probed: map[types.NamespacedName]bool{}, Probes: &activityprobe.Reader{Clock: suiteClock, Prober: &activityprobe.Prober{
		Sources: map[activityprobe.Format]activityprobe.Source{activityprobe.PrometheusGPU: HangingSource{}}, Timeout: 5 * time.Second}}}

// LastActivity answers what a test set for the workspace, or asks the
// probes for a workspace given to Probe, and counts the question.
func (f *FakeActivity) LastActivity(ctx context.Context, t lifecycle.ActivityTarget) lifecycle.Activity {
	f.mu.Lock()
	f.asked[t.Workspace]++
	probed, a := f.probed[t.Workspace], f.answers[t.Workspace]
	f.mu.Unlock()
	if probed {
		return f.Probes.LastActivity(ctx, t)
	}
	return a
}

// Subscribe hands on the probing reader's answers, when it sends them.
func (f *FakeActivity) Subscribe() <-chan event.GenericEvent {
	if s, ok := any(f.Probes).(interface {
		Subscribe() <-chan event.GenericEvent
	}); ok {
		return s.Subscribe()
	}
	return make(chan event.GenericEvent)
}

// Probe makes a workspace's activity asked through the hanging probes.
func (f *FakeActivity) Probe(key types.NamespacedName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.probed[key] = true
}

// HangingSource is a tenant's endpoint that answers nothing until the
// probe's timeout.
type HangingSource struct{}

// Observe waits for ctx to end.
func (HangingSource) Observe(ctx context.Context, _ activityprobe.Target, _ time.Time) (activityprobe.Observation, error) {
	<-ctx.Done()
	return activityprobe.Observation{}, ctx.Err()
}

// Set makes a the answer for the workspace key.
func (f *FakeActivity) Set(key types.NamespacedName, a lifecycle.Activity) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.answers[key] = a
}

// AskedFor is how often the manager asked for the workspace key's activity.
func (f *FakeActivity) AskedFor(key types.NamespacedName) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.asked[key]
}

// HubClass creates a class whose ServiceTemplate installs the stand-in's
// chart shaped like the workspace hub's (a Deployment pinned to one
// replica, a volume claim named after the release).
func HubClass(t *testing.T, ns, name string, mutate func(*workspacesv1.WorkspaceClass)) *workspacesv1.WorkspaceClass {
	t.Helper()
	ServiceTemplate(t, ns, name+"-tmpl", map[string]string{standin.AnnotationChart: standin.ChartWorkspaceHub})
	return WorkspaceClass(t, name+"-"+ns, ns, name+"-tmpl", mutate)
}

// UpdateWorkspace changes a workspace's spec or metadata, retrying on conflicts.
func UpdateWorkspace(t *testing.T, key client.ObjectKey, mutate func(*workspacesv1.WorkspaceDeployment)) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		w := &workspacesv1.WorkspaceDeployment{}
		if err := Env.Client.Get(context.Background(), key, w); err != nil {
			return err
		}
		mutate(w)
		return Env.Client.Update(context.Background(), w)
	}, Timeout, 100*time.Millisecond).Should(Succeed())
}

// SetStopped asks for a workspace to be stopped, or started again.
func SetStopped(t *testing.T, key client.ObjectKey, stopped bool) {
	t.Helper()
	UpdateWorkspace(t, key, func(w *workspacesv1.WorkspaceDeployment) {
		if w.Spec.Lifecycle == nil {
			w.Spec.Lifecycle = &workspacesv1.WorkspaceLifecycle{}
		}
		w.Spec.Lifecycle.Stopped = stopped
	})
}

// Poke asks for a reconcile, as `flux reconcile` does, so that a skewed
// clock is read at once.
func Poke(t *testing.T, key client.ObjectKey) {
	t.Helper()
	UpdateWorkspace(t, key, func(w *workspacesv1.WorkspaceDeployment) {
		if w.Annotations == nil {
			w.Annotations = map[string]string{}
		}
		w.Annotations[meta.ReconcileRequestAnnotation] = time.Now().Format(time.RFC3339Nano)
	})
}

// EventuallyStopped waits until a workspace finished stopping and reads
// as users see a stopped one.
func EventuallyStopped(t *testing.T, key client.ObjectKey) *workspacesv1.WorkspaceDeployment {
	t.Helper()
	var w *workspacesv1.WorkspaceDeployment
	NewWithT(t).Eventually(func(g Gomega) {
		w = GetWorkspace(g, key)
		g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseStopped), "message: %s", w.Status.Message)
		g.Expect(w.Status.Lifecycle).NotTo(BeNil())
		g.Expect(w.Status.Lifecycle.StoppedAt).NotTo(BeNil())
		ready := Condition(w, commonv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "the state the spec asks for")
		g.Expect(ready.Reason).To(Equal(workspacesv1.StoppedReason))
		g.Expect(Condition(w, commonv1.ReconcilingCondition)).To(BeNil(), "stopped is a desired state, not progress")
		g.Expect(Condition(w, commonv1.StalledCondition)).To(BeNil())
		g.Expect(w.Status.ObservedGeneration).To(Equal(w.Generation))
	}, Timeout, 200*time.Millisecond).Should(Succeed())
	return w
}

// HubRelease is what the hub-shaped chart made of a workspace on the child.
type HubRelease struct {
	Deployment *appsv1.Deployment
	PVC        *corev1.PersistentVolumeClaim
	Namespace  *corev1.Namespace
}

// ReadHubRelease reads the Deployment, volume claim and namespace the
// hub-shaped chart made of w on the child.
func ReadHubRelease(g Gomega, w *workspacesv1.WorkspaceDeployment) HubRelease {
	ctx := context.Background()
	ns, release := "ws-"+w.Name, "wsd-"+w.Spec.ClusterDeploymentRef.Name+"-"+w.Name
	out := HubRelease{Deployment: &appsv1.Deployment{}, PVC: &corev1.PersistentVolumeClaim{}, Namespace: &corev1.Namespace{}}
	g.Expect(ChildClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: release}, out.Deployment)).To(Succeed())
	g.Expect(ChildClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: release}, out.PVC)).To(Succeed())
	g.Expect(ChildClient.Get(ctx, client.ObjectKey{Name: ns}, out.Namespace)).To(Succeed())
	return out
}

// ExpectScaledAway checks that a stopped workspace's Deployment is at zero
// with its replicas saved, and that its ServiceSet carries k0rdent's pause.
func ExpectScaledAway(g Gomega, w *workspacesv1.WorkspaceDeployment) {
	rel := ReadHubRelease(g, w)
	g.Expect(*rel.Deployment.Spec.Replicas).To(BeZero())
	g.Expect(rel.Deployment.Annotations).To(HaveKeyWithValue(scaledown.ReplicasAnnotation, "1"))
	g.Expect(ServiceSetOf(g, w).Annotations).To(HaveKey(k0rdentv1beta1.ServiceSetPausedAnnotation))
}

// CounterValue sums an Apiary counter over the series whose labels carry
// the given values.
func CounterValue(name string, labels map[string]string) float64 {
	families, _ := ctrlmetrics.Registry.Gather()
	sum := 0.0
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			for k, v := range labels {
				if LabelValue(m, k) != v {
					continue series
				}
			}
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// LabelValue is the value of the label name of a metric, or "".
func LabelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
