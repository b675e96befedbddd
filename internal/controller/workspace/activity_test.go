package workspace_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/controllertest"
)

// TestSlowActivityProbesDelayNoOtherWorkspace (issue 30, item 8): twelve
// workspaces whose activity sources hang until the probe's timeout (5 s),
// more than the controller's eight workers, are due for an activity check
// at once; another workspace's stop is acted on meanwhile, well within the
// probes' timeout: the probes run off the reconcile workers.
func TestSlowActivityProbesDelayNoOtherWorkspace(t *testing.T) {
	g := NewWithT(t)
	ns := controllertest.Env.NewNamespace(t, "slowprobe")
	controllertest.ReadyCluster(t, ns, "c1")
	idle := controllertest.HubClass(t, ns, "idle", func(c *workspacesv1.WorkspaceClass) {
		c.Spec.Lifecycle = &workspacesv1.ClassLifecycle{Idle: &workspacesv1.IdlePolicy{
			After:  metav1.Duration{Duration: time.Hour},
			Source: workspacesv1.ActivitySource{Prometheus: &workspacesv1.PrometheusActivity{}}}}
	})
	plain := controllertest.HubClass(t, ns, "plain", nil)
	var slow []client.ObjectKey
	for i := range 12 {
		k := controllertest.CreateWorkspace(t, controllertest.NewWorkspace(ns, uniq(ns, "slow"+string(rune('a'+i))), idle.Name, "c1"))
		controllertest.Activity.Probe(k)
		slow = append(slow, k)
	}
	victim := controllertest.CreateWorkspace(t, controllertest.NewWorkspace(ns, uniq(ns, "victim"), plain.Name, "c1"))
	for _, k := range append([]client.ObjectKey{victim}, slow...) {
		controllertest.EventuallyRunning(t, k)
	}

	// Every slow workspace is due for a check now.
	controllertest.SkewClock(t, 2*time.Hour)
	for _, k := range slow {
		controllertest.Poke(t, k)
	}
	g.Eventually(func() int {
		n := 0
		for _, k := range slow {
			n += min(controllertest.Activity.AskedFor(k), 1)
		}
		return n
	}, controllertest.Timeout, 20*time.Millisecond).Should(BeNumerically(">=", 8), "the probes are in flight")

	asked := time.Now()
	controllertest.UpdateWorkspace(t, victim, func(w *workspacesv1.WorkspaceDeployment) {
		w.Spec.Lifecycle = &workspacesv1.WorkspaceLifecycle{Stopped: true}
	})
	g.Eventually(func(g Gomega) {
		w := controllertest.GetWorkspace(g, victim)
		g.Expect(w.Status.Lifecycle).NotTo(BeNil())
		g.Expect(w.Status.Lifecycle.StopRequestedAt).NotTo(BeNil())
	}, controllertest.Timeout, 20*time.Millisecond).Should(Succeed())
	g.Expect(time.Since(asked)).To(BeNumerically("<", 2*time.Second),
		"another workspace's stop waited for the hanging probes")

	// The probes' answers (unknown: they timed out) come back and cull nothing.
	g.Consistently(func(g Gomega) {
		for _, k := range slow {
			g.Expect(controllertest.GetWorkspace(g, k).Status.Phase).To(Equal(workspacesv1.PhaseRunning))
		}
	}, 7*time.Second, 500*time.Millisecond).Should(Succeed())
}
