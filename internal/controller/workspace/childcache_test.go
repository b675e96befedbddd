package workspace_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/controllertest"
	"github.com/apiaryhq/apiary/test/standin"
)

// informerTally counts the Node and Pod list and watch requests the child
// of cluster saw since mark, by "<VERB> <resource>" (GET is a list).
func informerTally(mark int, cluster string) map[string]int {
	out := map[string]int{}
	for _, r := range controllertest.InformerRequests(mark, cluster) {
		out[r.Verb+" "+r.Resource]++
	}
	return out
}

// cpuWorkspace asks for CPU and memory, no GPU.
func cpuWorkspace(ns, name, class, cluster string) *workspacesv1.WorkspaceDeployment {
	w := controllertest.NewWorkspace(ns, name, class, cluster)
	w.Spec.Resources = &workspacesv1.WorkspaceResourceSpec{PerReplica: &workspacesv1.PerReplicaResources{
		CPU: ptr.To(resource.MustParse("1")), Memory: ptr.To(resource.MustParse("1Gi"))}}
	return w
}

// TestWorkspacesWithoutGPUsOpenNoChildWatch (issue 33): workspaces without
// GPUs cost their child no list and no watch of Nodes or Pods, from their
// creation to Running; their Feasible verdict says it was not measured.
func TestWorkspacesWithoutGPUsOpenNoChildWatch(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "nowatch")
	controllertest.ReadyCluster(t, ns, "c1")
	controllertest.ServiceTemplate(t, ns, "tmpl", nil)
	controllertest.WorkspaceClass(t, "cpu-"+ns, ns, "tmpl", nil)

	const n = 5
	mark := controllertest.Requests.Mark()
	var keys []client.ObjectKey
	for i := range n {
		w := cpuWorkspace(ns, fmt.Sprintf("%s-w%d", ns, i), "cpu-"+ns, "c1")
		g.Expect(controllertest.Env.Client.Create(ctx, w)).To(Succeed())
		keys = append(keys, client.ObjectKeyFromObject(w))
	}
	for _, key := range keys {
		w := controllertest.EventuallyRunning(t, key)
		c := controllertest.Condition(w, workspacesv1.FeasibleCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).To(Equal(metav1.ConditionUnknown))
		g.Expect(c.Reason).To(Equal(workspacesv1.FeasibilityNotMeasuredReason))
	}
	time.Sleep(2 * time.Second) // anything still in flight is counted too
	g.Expect(informerTally(mark, ns+"/c1")).To(BeEmpty(), "no Node or Pod list or watch for workspaces without GPUs")
}

// TestGPUWorkspacesShareTheClusterCache (issue 33): GPU workspaces of one
// cluster, admitted together and one after another, cost its child one
// list (or none, with a streaming watch) and one watch of Nodes and of Pods
// in all: the cluster's caches are opened for the first and not restarted
// between workspaces. A workspace without GPUs created meanwhile is measured
// from them.
func TestGPUWorkspacesShareTheClusterCache(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "shared")
	controllertest.ReadyCluster(t, ns, "c1")
	controllertest.ServiceTemplate(t, ns, "tmpl", nil)
	controllertest.WorkspaceClass(t, "g-"+ns, ns, "tmpl", nil)
	model := "L4-" + ns
	g.Expect(standin.AddGPUNode(ctx, controllertest.ChildClient, ns+"-l4", map[string]string{"exalsius.ai/gpu-model": model}, "nvidia.com/gpu", 8)).To(Succeed())

	mark := controllertest.Requests.Mark()
	var together []client.ObjectKey
	for i := range 3 {
		together = append(together, controllertest.CreateWorkspace(t, gpuWorkspace(ns, fmt.Sprintf("%s-t%d", ns, i), "g-"+ns, "c1", model, 1)))
	}
	for _, key := range together {
		controllertest.EventuallyRunning(t, key)
	}
	opened := informerTally(mark, ns+"/c1")
	for i := range 3 {
		key := controllertest.CreateWorkspace(t, gpuWorkspace(ns, fmt.Sprintf("%s-s%d", ns, i), "g-"+ns, "c1", model, 1))
		controllertest.EventuallyRunning(t, key)
	}
	cpu := controllertest.EventuallyRunning(t, controllertest.CreateWorkspace(t, cpuWorkspace(ns, ns+"-cpu", "g-"+ns, "c1")))
	g.Expect(controllertest.Condition(cpu, workspacesv1.FeasibleCondition)).To(HaveField("Status", metav1.ConditionTrue),
		"measured from the caches the GPU workspaces opened")
	time.Sleep(2 * time.Second) // anything still in flight is counted too

	got := informerTally(mark, ns+"/c1")
	t.Logf("Node and Pod requests of 6 GPU workspaces and 1 without: %v", got)
	g.Expect(got).To(Equal(opened), "no list or watch after the first workspaces: the caches were not restarted")
	for _, resource := range []string{"nodes", "pods"} {
		g.Expect(got).To(HaveKeyWithValue("WATCH "+resource, 1), "one watch of %s for the cluster", resource)
		g.Expect(got["GET "+resource]).To(BeNumerically("<=", 1), "at most one list of %s for the cluster", resource)
	}
}

// TestStoppedWorkspacesShareOnePodWatch (issue 33, issue 31 item 4):
// stopped workspaces of one cluster are kept stopped by one watch of its
// Pods in all, not one each.
func TestStoppedWorkspacesShareOnePodWatch(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "stopwatch")
	controllertest.ReadyCluster(t, ns, "c1")
	controllertest.ServiceTemplate(t, ns, "tmpl", nil)
	controllertest.WorkspaceClass(t, "cpu-"+ns, ns, "tmpl", nil)

	mark := controllertest.Requests.Mark()
	var keys []client.ObjectKey
	for i := range 3 {
		w := cpuWorkspace(ns, fmt.Sprintf("%s-w%d", ns, i), "cpu-"+ns, "c1")
		g.Expect(controllertest.Env.Client.Create(ctx, w)).To(Succeed())
		keys = append(keys, client.ObjectKeyFromObject(w))
	}
	for _, key := range keys {
		controllertest.EventuallyRunning(t, key)
	}
	g.Expect(informerTally(mark, ns+"/c1")).To(BeEmpty(), "running without GPUs: no watch")
	for _, key := range keys {
		controllertest.SetStopped(t, key, true)
		controllertest.EventuallyStopped(t, key)
	}
	time.Sleep(2 * time.Second) // anything still in flight is counted too
	got := informerTally(mark, ns+"/c1")
	t.Logf("Node and Pod requests of 3 stopped workspaces: %v", got)
	g.Expect(got).To(HaveKeyWithValue("WATCH pods", 1), "one Pod watch for the cluster's stopped workspaces")
	g.Expect(got["GET pods"]).To(BeNumerically("<=", 1))
}
