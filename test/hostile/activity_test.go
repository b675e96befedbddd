package hostile_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/access"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
	"github.com/apiaryhq/apiary/test/standin"
	"github.com/apiaryhq/apiary/test/world"
	"github.com/apiaryhq/apiary/test/world/builder"
)

// The activity probes of idle policies against a hostile tenant (issue 30,
// items 8 and 13). A policy's source is asked again a check period (a
// quarter of its After, at least 30 s) after it was last asked: the tests'
// policies have the shortest period, so that a probe comes within 30 s.

// Test13ExternalNameServiceIsNotProbed (issue 30, item 13): a workspace's
// class reads its activity from its HTTP endpoint "web", through the child
// API server's Service proxy. The tenant owning ws-<name> on the child
// replaces the endpoint's Service with one of type ExternalName, which a
// proxy might follow out of the cluster. The probe is refused: a Warning
// event ActivityProbeRefused, and the workspace stays Running, its last
// activity unset.
func Test13ExternalNameServiceIsNotProbed(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "extname")
	builder.Templates(t, env.Client, ns)
	reg := standin.NewClusterDeployment(ns, "regional", "tpl", "cred")
	reg.Labels = map[string]string{access.ClusterNameLabel: "region-" + ns, access.ClusterRoleLabel: access.RoleRegional}
	reg.Annotations = map[string]string{annotationRegional: "true"}
	builder.CreateReady(t, env.Client, reg)
	gpu := standin.NewClusterDeployment(ns, "gpu", "tpl", "cred")
	gpu.Labels = map[string]string{access.RegionalClusterNameLabel: "region-" + ns}
	builder.CreateReady(t, env.Client, gpu)
	cls := class(t, ns, func(c *workspacesv1.WorkspaceClass) {
		c.Spec.AccessEndpoints = []workspacesv1.AccessEndpoint{{Name: "web", Protocol: workspacesv1.AccessProtocolHTTP, Port: 8888}}
		// After of 1 s: the check period is its minimum, 30 s; a known
		// activity would cull the workspace at its first probe.
		c.Spec.Lifecycle = &workspacesv1.ClassLifecycle{Idle: &workspacesv1.IdlePolicy{
			After: metav1.Duration{Duration: time.Second}, MinRuntime: &metav1.Duration{Duration: time.Second},
			Source: workspacesv1.ActivitySource{Endpoint: &workspacesv1.EndpointActivity{
				Endpoint: "web", Format: workspacesv1.ActivityJupyterStatus}}}}
	})
	name := "nb-ext-" + ns[len(ns)-5:]
	w := workspace(ns, name, cls, "gpu")
	create(t, w)
	world.EventuallyPhase(t, env.Client, w, workspacesv1.PhaseRunning)

	// The Service the probe asks for: <release>-<endpoint> in ws-<name>.
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: plan.ChildNamespace(name),
		Name: plan.ReleaseName("gpu", name) + "-web"}}
	if err := child.Client.Delete(ctx, svc); client.IgnoreNotFound(err) != nil {
		t.Fatalf("deleting the release's Service: %v", err)
	}
	g.Eventually(func() bool {
		return apierrors.IsNotFound(child.Client.Get(ctx, client.ObjectKeyFromObject(svc), &corev1.Service{}))
	}, timeout, 100*time.Millisecond).Should(BeTrue())
	svc.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "attacker.example.com",
		Ports: []corev1.ServicePort{{Name: "web", Port: 8888}}}
	g.Expect(child.Client.Create(ctx, svc)).To(Succeed())
	t.Cleanup(func() { _ = child.Client.Delete(context.Background(), svc) })

	start := time.Now()
	g.Eventually(func(g Gomega) {
		got := get(g, w)
		g.Expect(eventReasons(g, w)).To(ContainElement(workspacesv1.ActivityProbeRefusedReason),
			"phase %s; lifecycle %+v", got.Status.Phase, got.Status.Lifecycle)
	}).WithTimeout(timeout).WithPolling(500 * time.Millisecond).Should(Succeed())
	t.Logf("ActivityProbeRefused %s after the ExternalName Service was made", time.Since(start).Round(time.Second))
	g.Consistently(func(g Gomega) {
		got := get(g, w)
		g.Expect(got.Status.Phase).To(Equal(workspacesv1.PhaseRunning), "message: %s", got.Status.Message)
		g.Expect(got.Spec.Lifecycle == nil || !got.Spec.Lifecycle.Stopped).To(BeTrue(), "the workspace is not culled")
		g.Expect(got.Status.Lifecycle).NotTo(BeNil())
		g.Expect(got.Status.Lifecycle.ActivityCheckedAt).NotTo(BeNil(), "the source was asked")
		g.Expect(got.Status.Lifecycle.LastActivity).To(BeNil(), "no activity is read from a refused probe")
	}).WithTimeout(3 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
}

// Test8SlowProbesDoNotHoldTheWorkers (issue 30, item 8): the manager's
// Prometheus hangs every query for as long as a probe may take (30 s),
// and ten workspaces' idle policies ask it. While at least eight queries
// hang (as many as the workspace controller has workers), another tenant
// stops its workspace and creates one: both happen within seconds.
func Test8SlowProbesDoNotHoldTheWorkers(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	var hanging, asked atomic.Int64
	release := make(chan struct{})
	prom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		hanging.Add(1)
		defer hanging.Add(-1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
		http.Error(w, "gone", http.StatusServiceUnavailable)
	}))
	t.Cleanup(prom.Close)
	t.Cleanup(func() { close(release) })
	switchManager(t, "slow-prometheus", "--activity-prometheus-url="+prom.URL,
		"--activity-probe-timeout=30s", "--activity-probe-concurrency=8")

	ns := tenant(t, "slowprobe")
	sfx := ns[len(ns)-5:]
	idle := class(t, ns, func(c *workspacesv1.WorkspaceClass) {
		c.Name += "-idle"
		c.Spec.Lifecycle = &workspacesv1.ClassLifecycle{Idle: &workspacesv1.IdlePolicy{
			// After of 2 min: the check period is 30 s; MinRuntime keeps
			// the workspaces from being culled.
			After: metav1.Duration{Duration: 2 * time.Minute}, MinRuntime: &metav1.Duration{Duration: time.Hour},
			Source: workspacesv1.ActivitySource{Prometheus: &workspacesv1.PrometheusActivity{}}}}
	})
	plain := class(t, ns, nil)
	other := workspace(ns, "other-"+sfx, plain, "c1")
	create(t, other)
	var probed []*workspacesv1.WorkspaceDeployment
	for i := range 10 {
		w := workspace(ns, fmt.Sprintf("gpu-%s-%d", sfx, i), idle, "c1")
		create(t, w)
		probed = append(probed, w)
	}
	for _, w := range append(probed, other) {
		world.EventuallyPhase(t, env.Client, w, workspacesv1.PhaseRunning)
	}
	// The probes come at most a check period (30 s) after Running.
	g.Eventually(hanging.Load).WithTimeout(timeout).WithPolling(100*time.Millisecond).
		Should(BeNumerically(">=", 8), "queries hanging at Prometheus")
	t.Logf("%d queries hang at Prometheus (%d asked)", hanging.Load(), asked.Load())

	w := get(g, other)
	w.Spec.Lifecycle = &workspacesv1.WorkspaceLifecycle{Stopped: true}
	g.Expect(env.Client.Update(ctx, w)).To(Succeed())
	stopAt := time.Now()
	g.Eventually(func(g Gomega) {
		got := get(g, other)
		g.Expect(got.Status.Phase).To(Equal(workspacesv1.PhaseStopped), "message: %s", got.Status.Message)
	}).WithTimeout(5*time.Second).WithPolling(100*time.Millisecond).Should(Succeed(),
		"the stop waits for no tenant's probe")
	t.Logf("stopped %s after the request, with %d queries hanging", time.Since(stopAt).Round(10*time.Millisecond), hanging.Load())

	late := workspace(ns, "late-"+sfx, plain, "c1")
	create(t, late)
	createdAt := time.Now()
	g.Eventually(func(g Gomega) {
		got := get(g, late)
		g.Expect(got.Status.Phase).To(Equal(workspacesv1.PhaseRunning), "message: %s", got.Status.Message)
	}).WithTimeout(10*time.Second).WithPolling(100*time.Millisecond).Should(Succeed(),
		"a new workspace waits for no tenant's probe")
	t.Logf("a new workspace Running %s after its creation, with %d queries hanging",
		time.Since(createdAt).Round(10*time.Millisecond), hanging.Load())
	g.Expect(hanging.Load()).To(BeNumerically(">=", 8), "the probes still hang: the test measured what it meant to")
}
