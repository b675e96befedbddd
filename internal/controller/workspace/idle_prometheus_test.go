package workspace_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/controllertest"
	activityprobe "github.com/apiaryhq/apiary/internal/workspace/activity"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
)

// promRoutes sends the PrometheusGPU probes of the workspaces a test routed
// (by child namespace) to a real activity.Prometheus source; the others go
// to the hanging source as before. It is put in front of the suite's probing
// reader (controllertest.Activity.Probes, on the reconciler's clock).
var promRoutes = &routedSource{byNamespace: map[string]activityprobe.Source{}, fallback: controllertest.HangingSource{}}

func init() {
	controllertest.Activity.Probes.Prober.Sources[activityprobe.PrometheusGPU] = promRoutes
}

type routedSource struct {
	mu          sync.Mutex
	byNamespace map[string]activityprobe.Source
	fallback    activityprobe.Source
}

func (r *routedSource) Observe(ctx context.Context, t activityprobe.Target, now time.Time) (activityprobe.Observation, error) {
	r.mu.Lock()
	s := r.byNamespace[t.Namespace]
	r.mu.Unlock()
	if s == nil {
		s = r.fallback
	}
	return s.Observe(ctx, t, now)
}

func (r *routedSource) route(t *testing.T, namespace string, s activityprobe.Source) {
	r.mu.Lock()
	r.byNamespace[namespace] = s
	r.mu.Unlock()
	t.Cleanup(func() {
		r.mu.Lock()
		delete(r.byNamespace, namespace)
		r.mu.Unlock()
	})
}

// idlePrometheus is a Prometheus HTTP API answering every instant query
// with 0 % GPU utilisation, at the time it was asked for.
func idlePrometheus(t *testing.T) (*httptest.Server, *atomic.Int32) {
	var queries atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		queries.Add(1)
		at := r.URL.Query().Get("time")
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[%s,"0"]}]}}`, at)
	}))
	t.Cleanup(srv.Close)
	return srv, &queries
}

// TestIdleCullingWithPrometheusSource (issue 31, item 1): a class idle
// after 1m with a minimum runtime of 70s reads a Prometheus answering 0 %
// through the real source and reader, on the reconciler's clock. Before
// runningSince+70s the workspace is kept; once the clock passes it, the
// workspace is stopped as idle (reason Idle, event IdleCulled).
func TestIdleCullingWithPrometheusSource(t *testing.T) {
	g := NewWithT(t)
	ns := controllertest.Env.NewNamespace(t, "idleprom")
	controllertest.ReadyCluster(t, ns, "c1")
	class := controllertest.HubClass(t, ns, "idle", func(c *workspacesv1.WorkspaceClass) {
		c.Spec.Lifecycle = &workspacesv1.ClassLifecycle{Idle: &workspacesv1.IdlePolicy{
			After: metav1.Duration{Duration: time.Minute}, MinRuntime: &metav1.Duration{Duration: 70 * time.Second},
			Source: workspacesv1.ActivitySource{Prometheus: &workspacesv1.PrometheusActivity{}}}}
	})
	srv, queries := idlePrometheus(t)
	name := uniq(ns, "gpu")
	promRoutes.route(t, plan.ChildNamespace(name), &activityprobe.Prometheus{URL: srv.URL, Timeout: 2 * time.Second})
	controllertest.Activity.Probe(types.NamespacedName{Namespace: ns, Name: name})
	key2 := controllertest.CreateWorkspace(t, controllertest.NewWorkspace(ns, name, class.Name, "c1"))
	started := controllertest.EventuallyRunning(t, key2).Status.Lifecycle.RunningSince.Time

	// 65s in: idle for the whole window, but ran less than 70s: kept.
	controllertest.SkewClock(t, 65*time.Second)
	controllertest.Poke(t, key2)
	g.Eventually(func(g Gomega) {
		l := controllertest.GetWorkspace(g, key2).Status.Lifecycle
		g.Expect(l.ActivityCheckedAt).NotTo(BeNil())
		g.Expect(l.LastActivity).NotTo(BeNil())
		g.Expect(l.ActivityCheckedAt.Sub(l.LastActivity.Time)).To(Equal(time.Minute))
	}, controllertest.Timeout, 100*time.Millisecond).Should(Succeed())
	g.Expect(queries.Load()).To(BeNumerically(">=", 1))
	g.Expect(controllertest.GetWorkspace(g, key2).Status.Phase).To(Equal(workspacesv1.PhaseRunning), "minRuntime not reached")

	// Past runningSince + max(minRuntime, after): culled as idle.
	controllertest.SkewClock(t, 2*time.Minute)
	controllertest.Poke(t, key2)
	w := controllertest.EventuallyStopped(t, key2)
	g.Expect(w.Status.Lifecycle.StopReason).To(Equal(workspacesv1.StopIdle))
	g.Expect(w.Spec.Lifecycle.Stopped).To(BeTrue())
	g.Expect(w.Status.Lifecycle.StopRequestedAt.Sub(started)).To(BeNumerically(">=", 70*time.Second))
	g.Eventually(func(g Gomega) {
		g.Expect(eventReasons(g, ns, name)).To(ContainElement(workspacesv1.IdleCulledReason))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
}

// TestPrometheusIdleAfterUnderAMinuteIsRefused (issue 31, item 2): the
// Prometheus source reads utilisation over windows of a minute at least,
// so the API server refuses a class whose idle policy with that source has
// `after` under a minute, naming the minimum; 1m, and 30s with an
// endpoint source, are accepted.
func TestPrometheusIdleAfterUnderAMinuteIsRefused(t *testing.T) {
	g := NewWithT(t)
	class := func(name string, after time.Duration, prom bool) *workspacesv1.WorkspaceClass {
		src := workspacesv1.ActivitySource{Prometheus: &workspacesv1.PrometheusActivity{}}
		if !prom {
			src = workspacesv1.ActivitySource{Endpoint: &workspacesv1.EndpointActivity{Endpoint: "ui", Format: workspacesv1.ActivityJupyterStatus}}
		}
		return &workspacesv1.WorkspaceClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: workspacesv1.WorkspaceClassSpec{
			DisplayName:     name,
			ServiceTemplate: workspacesv1.ServiceTemplateRef{Name: "t", Namespace: "default"},
			AccessEndpoints: []workspacesv1.AccessEndpoint{{Name: "ui", Protocol: workspacesv1.AccessProtocolHTTP, Port: 8888}},
			Lifecycle: &workspacesv1.ClassLifecycle{Idle: &workspacesv1.IdlePolicy{
				After: metav1.Duration{Duration: after}, Source: src}},
		}}
	}
	ctx := context.Background()
	for _, c := range []*workspacesv1.WorkspaceClass{class("idle-prom-30s", 30*time.Second, true), class("idle-prom-59s", 59*time.Second, true)} {
		err := controllertest.Env.Client.Create(ctx, c)
		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "%s: %v", c.Name, err)
		g.Expect(err.Error()).To(ContainSubstring("spec.lifecycle.idle.after"))
		g.Expect(err.Error()).To(ContainSubstring("at least 1m with the prometheus source"))
	}
	for _, c := range []*workspacesv1.WorkspaceClass{class("idle-prom-1m", time.Minute, true), class("idle-endpoint-30s", 30*time.Second, false)} {
		g.Expect(controllertest.Env.Client.Create(ctx, c)).To(Succeed(), c.Name)
		t.Cleanup(func() { _ = controllertest.Env.Client.Delete(context.Background(), c) })
	}
}

// switchablePrometheus answers every query with an HTTP 500 while failing
// is set, else with busy (100 %) GPU utilisation.
func switchablePrometheus(t *testing.T) (*httptest.Server, *atomic.Bool, *atomic.Int32) {
	var failing atomic.Bool
	var queries atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		queries.Add(1)
		if failing.Load() {
			http.Error(w, "down", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[%s,"100"]}]}}`, r.URL.Query().Get("time"))
	}))
	t.Cleanup(srv.Close)
	failing.Store(true)
	return srv, &failing, &queries
}

// TestFailingActivitySourceIsShown (issue 31, item 2): a Prometheus that
// keeps failing turns the workspace's ActivityKnown False (reason
// ActivityUnknown, the failure in its message) after three answers in a
// row, with a Warning event on the workspace and on its class; an answer
// turns it True again and resets the count.
func TestFailingActivitySourceIsShown(t *testing.T) {
	g := NewWithT(t)
	ns := controllertest.Env.NewNamespace(t, "failprom")
	controllertest.ReadyCluster(t, ns, "c1")
	class := controllertest.HubClass(t, ns, "idle", func(c *workspacesv1.WorkspaceClass) {
		c.Spec.Lifecycle = &workspacesv1.ClassLifecycle{Idle: &workspacesv1.IdlePolicy{
			After:  metav1.Duration{Duration: time.Minute},
			Source: workspacesv1.ActivitySource{Prometheus: &workspacesv1.PrometheusActivity{}}}}
	})
	srv, failing, queries := switchablePrometheus(t)
	name := uniq(ns, "gpu")
	key := types.NamespacedName{Namespace: ns, Name: name}
	promRoutes.route(t, plan.ChildNamespace(name), &activityprobe.Prometheus{URL: srv.URL, Timeout: 2 * time.Second})
	controllertest.Activity.Probe(key)
	controllertest.CreateWorkspace(t, controllertest.NewWorkspace(ns, name, class.Name, "c1"))
	controllertest.EventuallyRunning(t, key)

	// check advances the clock past the next check period and waits for
	// the answer to be read. (A workspace may be asked once already as it
	// reaches Running.)
	step := 0
	check := func() *workspacesv1.WorkspaceDeployment {
		t.Helper()
		step++
		controllertest.SkewClock(t, time.Duration(step)*31*time.Second)
		controllertest.Poke(t, key)
		var w *workspacesv1.WorkspaceDeployment
		g.Eventually(func(g Gomega) {
			w = controllertest.GetWorkspace(g, key)
			g.Expect(w.Status.Lifecycle.ActivityCheckedAt).NotTo(BeNil())
			g.Expect(w.Status.Lifecycle.ActivityCheckedAt.Time).To(BeTemporally(">", w.Status.Lifecycle.RunningSince.Add(time.Duration(step)*31*time.Second-2*time.Second)))
		}, controllertest.Timeout, 100*time.Millisecond).Should(Succeed())
		return w
	}
	w := check()
	for last := w.Status.Lifecycle.ActivityFailures; last < workspacesv1.ActivityFailuresShown; last = w.Status.Lifecycle.ActivityFailures {
		g.Expect(conditions.Has(w, workspacesv1.ActivityKnownCondition)).To(BeFalse(), "a failure or two is not shown")
		w = check()
		g.Expect(w.Status.Lifecycle.ActivityFailures).To(Equal(last+1), "one failure a check")
	}
	g.Expect(queries.Load()).To(BeNumerically(">=", workspacesv1.ActivityFailuresShown))
	g.Expect(conditions.IsFalse(w, workspacesv1.ActivityKnownCondition)).To(BeTrue())
	g.Expect(conditions.GetReason(w, workspacesv1.ActivityKnownCondition)).To(Equal(workspacesv1.ActivityUnknownReason))
	g.Expect(conditions.GetMessage(w, workspacesv1.ActivityKnownCondition)).To(ContainSubstring("HTTP 500"))
	g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseRunning))
	g.Eventually(func(g Gomega) {
		g.Expect(eventReasons(g, ns, name)).To(ContainElement(workspacesv1.ActivityUnknownReason))
		list := &eventsv1.EventList{}
		g.Expect(controllertest.Env.Client.List(context.Background(), list)).To(Succeed())
		var onClass []string
		for _, e := range list.Items {
			if e.Regarding.Kind == "WorkspaceClass" && e.Regarding.Name == class.Name {
				onClass = append(onClass, e.Reason)
			}
		}
		g.Expect(onClass).To(ContainElement(workspacesv1.ActivityUnknownReason))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())

	// The source answers again: True, the count reset.
	failing.Store(false)
	w = check()
	g.Expect(w.Status.Lifecycle.ActivityFailures).To(BeZero())
	g.Expect(conditions.IsTrue(w, workspacesv1.ActivityKnownCondition)).To(BeTrue())
	g.Expect(conditions.GetReason(w, workspacesv1.ActivityKnownCondition)).To(Equal(workspacesv1.ActivityKnownReason))
}
