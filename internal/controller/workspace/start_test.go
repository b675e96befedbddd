package workspace_test

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/controllertest"
	"github.com/apiaryhq/apiary/test/standin"
)

// TestWorkspaceStartIsSeenAsDocumented: a stopped workspace keeps no
// verdict of its running self (no Feasible=True, no runningSince); started
// again, a watch sees it go Stopped → Pending → Deploying → Running, and the
// API server holds both start events (Starting when it queues, Started when
// its workloads are scaled back), each with its own message, not one folded
// into the other.
func TestWorkspaceStartIsSeenAsDocumented(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "start")
	controllertest.ReadyCluster(t, ns, "c1")
	class := controllertest.HubClass(t, ns, "hub", nil)
	model := "A10-" + ns
	g.Expect(standin.AddGPUNode(ctx, controllertest.ChildClient, ns+"-a10", map[string]string{"exalsius.ai/gpu-model": model}, "nvidia.com/gpu", 1)).To(Succeed())

	key := controllertest.CreateWorkspace(t, gpuWorkspace(ns, uniq(ns, "w"), class.Name, "c1", model, 1))
	running := controllertest.EventuallyRunning(t, key)
	g.Expect(controllertest.Condition(running, workspacesv1.FeasibleCondition)).To(HaveField("Status", metav1.ConditionTrue))

	controllertest.SetStopped(t, key, true)
	stopped := controllertest.EventuallyStopped(t, key)
	g.Expect(controllertest.Condition(stopped, workspacesv1.FeasibleCondition)).To(BeNil(), "a stopped workspace demands nothing: no verdict on its demand")
	g.Expect(stopped.Status.Feasibility).To(BeNil())

	phases := watchPhases(t, key)
	controllertest.SetStopped(t, key, false)
	again := controllertest.EventuallyRunning(t, key)
	g.Expect(again.Status.Lifecycle.RunningSince).NotTo(BeNil())
	g.Expect(again.Status.Lifecycle.RunningSince.Before(stopped.Status.Lifecycle.StoppedAt)).To(BeFalse(), "counted from the start")
	g.Expect(controllertest.Condition(again, workspacesv1.FeasibleCondition)).To(HaveField("Status", metav1.ConditionTrue))
	g.Eventually(phases.get, controllertest.Timeout, 100*time.Millisecond).Should(ContainElements(
		workspacesv1.PhaseStopped, workspacesv1.PhasePending, workspacesv1.PhaseDeploying, workspacesv1.PhaseRunning))
	seen := phases.get()
	g.Expect(seen[:2]).To(HaveExactElements(workspacesv1.PhaseStopped, workspacesv1.PhasePending),
		"the phases a watch sees, in order: %v", seen)
	g.Expect(seen[len(seen)-2:]).To(HaveExactElements(workspacesv1.PhaseDeploying, workspacesv1.PhaseRunning),
		"the phases a watch sees, in order: %v", seen)

	g.Eventually(func(g Gomega) {
		msgs := map[string][]string{}
		list := &eventsv1.EventList{}
		g.Expect(controllertest.Env.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		for _, e := range list.Items {
			if e.Regarding.Kind == "WorkspaceDeployment" && e.Regarding.Name == key.Name && e.Action == "Start" {
				msgs[e.Reason] = append(msgs[e.Reason], e.Note)
			}
		}
		g.Expect(msgs[workspacesv1.StartingReason]).To(ConsistOf(ContainSubstring("queues for its GPUs and quota")))
		g.Expect(msgs[workspacesv1.StartedReason]).To(ConsistOf(ContainSubstring("1 workload(s) scaled back")))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())

	// Stopped again, after a start recorded when it ran.
	controllertest.SetStopped(t, key, true)
	stopped = controllertest.EventuallyStopped(t, key)
	g.Expect(stopped.Status.Lifecycle.RunningSince).To(BeNil(), "a stopped workspace is not running")
	g.Expect(controllertest.Condition(stopped, workspacesv1.FeasibleCondition)).To(BeNil())
}

// phaseRecorder holds the phases a watch saw a workspace in, in order,
// each run of the same phase once.
type phaseRecorder struct {
	mu     sync.Mutex
	phases []workspacesv1.WorkspacePhase
}

func (p *phaseRecorder) get() []workspacesv1.WorkspacePhase {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]workspacesv1.WorkspacePhase(nil), p.phases...)
}

// watchPhases records every phase of the workspace that the API server
// serves from now on, until the test ends.
func watchPhases(t *testing.T, key client.ObjectKey) *phaseRecorder {
	t.Helper()
	wc, err := client.NewWithWatch(controllertest.Env.Config, client.Options{Scheme: controllertest.Env.Scheme})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	watcher, err := wc.Watch(ctx, &workspacesv1.WorkspaceDeploymentList{}, client.InNamespace(key.Namespace),
		client.MatchingFields{"metadata.name": key.Name})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	rec := &phaseRecorder{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range watcher.ResultChan() {
			w, ok := ev.Object.(*workspacesv1.WorkspaceDeployment)
			if !ok || ev.Type == watch.Error {
				continue
			}
			rec.mu.Lock()
			if n := len(rec.phases); n == 0 || rec.phases[n-1] != w.Status.Phase {
				rec.phases = append(rec.phases, w.Status.Phase)
			}
			rec.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); watcher.Stop(); <-done })
	return rec
}
