// Package admission_test proves GPU admission and tenant quotas end to end:
// a management control plane with the k0rdent stand-in, one child control
// plane holding each test's GPU nodes (and the pods a scheduler would have
// bound), and an Apiary manager started by each test, so that tests can
// restart it and choose its queueing policy. Tests run one after the other:
// a request for "any GPU" sees every node of the child, so each test
// removes its nodes and pods when it ends.
package admission_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/admission"
	"github.com/apiaryhq/apiary/internal/manager"
	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/test/managertest"
	"github.com/apiaryhq/apiary/test/standin"
	"github.com/apiaryhq/apiary/test/world"
	"github.com/apiaryhq/apiary/test/world/builder"
)

const timeout = 60 * time.Second

var (
	env, child *testenv.Environment
)

func TestMain(m *testing.M) {
	world.Main(m, world.World{Name: "admission", Management: true, Child: true, StandIn: standin.InWorld()},
		func(r *world.Running) error {
			env, child = r.Management, r.Child
			return nil
		})
}

// apiary starts a manager for one test, stopped when the test ends (after
// the test's workspaces are gone), and restartable.
func apiary(t *testing.T, policy admission.Policy, crossNamespace bool) *managertest.Manager {
	t.Helper()
	return managertest.Start(t, manager.Options{
		RestConfig:           env.Config,
		InventoryInterval:    time.Minute,
		NoCrossNamespaceRefs: !crossNamespace,
		GPUQueueing:          policy,
	})
}

// tenant creates a namespace with labels, a ready ClusterDeployment "c1" in
// it, its template and credential, and a ServiceTemplate "tmpl".
func tenant(t *testing.T, prefix string, labels map[string]string) string {
	t.Helper()
	ns := env.NewNamespace(t, prefix)
	if len(labels) > 0 {
		setNamespaceLabels(t, ns, labels)
	}
	builder.ReadyCluster(t, env.Client, ns, "c1")
	return ns
}

func setNamespaceLabels(t *testing.T, ns string, labels map[string]string) {
	t.Helper()
	builder.LabelNamespace(t, env.Client, ns, labels)
}

func isTrue(conds []metav1.Condition, t string) bool {
	for _, c := range conds {
		if c.Type == t {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

// class creates a cluster-scoped WorkspaceClass on a namespace's template.
func class(t *testing.T, ns string) string {
	t.Helper()
	return builder.Class(t, env.Client, ns, "GPU workspace")
}

// gpus asks for count GPUs per replica, with optional gpuType and selector.
type gpus struct {
	count    int32
	replicas int32
	model    string
	selector map[string]string
	cpu      string
}

// workspace creates a workspace of a class on the namespace's cluster c1
// (or on cluster of namespace cdNS) and removes it when the test ends.
func workspace(t *testing.T, ns, name, cls string, g gpus) *workspacesv1.WorkspaceDeployment {
	t.Helper()
	w := builder.Workspace(ns, name, cls, builder.Cluster)
	w.Spec.Resources = g.resources()
	create(t, w)
	return w
}

func (g gpus) resources() *workspacesv1.WorkspaceResourceSpec {
	per := &workspacesv1.PerReplicaResources{}
	if g.count > 0 {
		per.GPUCount = ptr.To(g.count)
	}
	if g.model != "" {
		per.GPUType = ptr.To(g.model)
	}
	per.GPUNodeSelector = g.selector
	if g.cpu != "" {
		per.CPU = ptr.To(resource.MustParse(g.cpu))
	}
	res := &workspacesv1.WorkspaceResourceSpec{PerReplica: per}
	if g.replicas > 0 {
		res.Replicas = ptr.To(g.replicas)
	}
	return res
}

func create(t *testing.T, w *workspacesv1.WorkspaceDeployment) {
	t.Helper()
	builder.Create(t, env.Client, w)
}

// deleteAndWait deletes a workspace and waits until it is gone (its
// finalizer released while a manager runs).
func deleteAndWait(t *testing.T, w *workspacesv1.WorkspaceDeployment) {
	t.Helper()
	world.DeleteAndWait(t, env.Client, w)
}

func get(g Gomega, w *workspacesv1.WorkspaceDeployment) *workspacesv1.WorkspaceDeployment {
	return world.Get(g, env.Client, w)
}

// eventuallyPhase waits for a phase and returns the workspace.
func eventuallyPhase(t *testing.T, w *workspacesv1.WorkspaceDeployment, phase workspacesv1.WorkspacePhase) *workspacesv1.WorkspaceDeployment {
	t.Helper()
	return world.EventuallyPhase(t, env.Client, w, phase)
}

// eventuallyWaiting waits until a workspace waits for a reason, of the
// gate's condition or of QuotaReserved.
func eventuallyWaiting(t *testing.T, w *workspacesv1.WorkspaceDeployment, condition, reason string) *workspacesv1.WorkspaceDeployment {
	t.Helper()
	var out *workspacesv1.WorkspaceDeployment
	NewWithT(t).Eventually(func(g Gomega) {
		out = get(g, w)
		g.Expect(out.Status.Phase).To(Equal(workspacesv1.PhaseWaiting), "message: %s", out.Status.Message)
		c := cond(out, condition)
		g.Expect(c).NotTo(BeNil(), "no %s condition", condition)
		g.Expect(c.Reason).To(Equal(reason), "message: %s", c.Message)
	}, timeout, 200*time.Millisecond).Should(Succeed())
	return out
}

func cond(w *workspacesv1.WorkspaceDeployment, t string) *metav1.Condition {
	for i := range w.Status.Conditions {
		if w.Status.Conditions[i].Type == t {
			return &w.Status.Conditions[i]
		}
	}
	return nil
}

func running(t *testing.T, w *workspacesv1.WorkspaceDeployment) *workspacesv1.WorkspaceDeployment {
	t.Helper()
	out := eventuallyPhase(t, w, workspacesv1.PhaseRunning)
	NewWithT(t).Expect(isTrue(out.Status.Conditions, commonv1.ReadyCondition) || out.Status.Phase == workspacesv1.PhaseRunning).To(BeTrue())
	return out
}

// gpuNode adds a GPU node to the child, removed (with its pods) when the test ends.
func gpuNode(t *testing.T, name string, labels map[string]string, count int64) {
	t.Helper()
	ctx := context.Background()
	if err := standin.AddGPUNode(ctx, child.Client, name, labels, "nvidia.com/gpu", count); err != nil {
		t.Fatalf("adding node %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = child.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
	})
}

// boundPod creates a pod that a scheduler bound to a node, asking for GPUs,
// in a namespace of the child (ws-<name> for a workspace's own pods).
func boundPod(t *testing.T, namespace, name, node string, count int64) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if err := child.Client.Create(ctx, ns); client.IgnoreAlreadyExists(err) != nil {
		t.Fatal(err)
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(count, resource.DecimalSI)}}}}},
	}
	if err := child.Client.Create(ctx, p); err != nil {
		t.Fatalf("creating pod %s: %v", name, err)
	}
	t.Cleanup(func() { deletePod(t, p) })
	return p
}

// deletePod removes a pod at once: no kubelet runs to confirm its end.
func deletePod(t *testing.T, p *corev1.Pod) {
	t.Helper()
	_ = client.IgnoreNotFound(child.Client.Delete(context.Background(), p, client.GracePeriodSeconds(0)))
}

// serviceSets counts the ServiceSets of the namespace's workspaces.
func serviceSets(g Gomega, ns string) []string {
	list := &k0rdentv1beta1.ServiceSetList{}
	g.Expect(env.Client.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, ss := range list.Items {
		out = append(out, ss.Name)
	}
	return out
}
