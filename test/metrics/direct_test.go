package metrics_test

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/manager"
	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/internal/usage"
	"github.com/apiaryhq/apiary/test/standin"
	"github.com/apiaryhq/apiary/test/world/builder"
)

// create creates an object and, when the test ends (before its manager
// stops), deletes it and waits until it is gone, so that no finalizer is
// left for the next test's manager.
func create(t *testing.T, obj client.Object) {
	t.Helper()
	ctx := context.Background()
	if err := env.Client.Create(ctx, obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
	t.Cleanup(func() {
		_ = env.Client.Delete(ctx, obj)
		NewWithT(t).Eventually(func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object)))
		}, timeout).Should(BeTrue(), "%T %s is not gone", obj, obj.GetName())
	})
}

// fixtures creates what k0rdent holds in a namespace: a cluster template,
// a credential and a service template.
func fixtures(t *testing.T, ns string) { t.Helper(); builder.Templates(t, env.Client, ns) }

func colony(ns, name string, clusters ...string) *infrav1.Colony {
	return builder.Colony(ns, name, clusters...)
}

func workspace(ns, name, class, cd string, gpus int32) *workspacesv1.WorkspaceDeployment {
	return &workspacesv1.WorkspaceDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: workspacesv1.WorkspaceDeploymentSpec{WorkspaceClassRef: class,
			ClusterDeploymentRef: workspacesv1.ClusterDeploymentReference{Name: cd},
			Resources:            &workspacesv1.WorkspaceResourceSpec{PerReplica: &workspacesv1.PerReplicaResources{GPUCount: ptr.To(gpus)}}}}
}

func phaseOf(g Gomega, w *workspacesv1.WorkspaceDeployment) workspacesv1.WorkspacePhase {
	got := &workspacesv1.WorkspaceDeployment{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(w), got)).To(Succeed())
	return got.Status.Phase
}

func eventuallyPhase(t *testing.T, w *workspacesv1.WorkspaceDeployment, phase workspacesv1.WorkspacePhase) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) { g.Expect(phaseOf(g, w)).To(Equal(phase)) }, timeout).Should(Succeed())
}

// TestWhatAUserReadsInDirectMode follows a Colony and two GPU workspaces
// through a manager's metrics endpoint: capacity, admissions, the waiting
// gauge with its reason, free GPUs, quota use, child caches and an
// unreachable cluster, the time to Running of each workspace, and per-object
// reconcile durations that go with their object.
func TestWhatAUserReadsInDirectMode(t *testing.T) {
	g := NewWithT(t)
	url := apiary(t, manager.Options{})
	ctx := context.Background()
	ns := env.NewNamespace(t, "metrics")
	ns0 := &corev1.Namespace{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: ns}, ns0)).To(Succeed())
	ns0.Labels = map[string]string{"tenant": ns}
	g.Expect(env.Client.Update(ctx, ns0)).To(Succeed())
	fixtures(t, ns)
	g.Expect(standin.AddGPUNode(ctx, child.Client, "metrics-n1", map[string]string{"exalsius.ai/gpu-model": "L4"}, "nvidia.com/gpu", 2)).To(Succeed())
	t.Cleanup(func() { _ = child.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "metrics-n1"}}) })
	quota := &quotav1alpha1.TenantQuota{ObjectMeta: metav1.ObjectMeta{Name: "metrics-" + ns}, Spec: quotav1alpha1.TenantQuotaSpec{
		NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tenant": ns}},
		Hard:              quotav1alpha1.QuotaLimits{GPUs: []quotav1alpha1.GPULimit{{Name: "all", Count: 8}}}}}
	create(t, quota)
	create(t, colony(ns, "fleet", "c1", "c2"+unreachableSuffix))
	cluster, down := ns+"/fleet-c1", ns+"/fleet-c2"+unreachableSuffix
	class := builder.NewClass(ns, "GPU workspace", builder.Named("metrics-"+ns))
	create(t, class)

	var started int64
	eventually(t, url, func(g Gomega, f families) {
		g.Expect(f.value("apiary_gpus_capacity", "cluster_deployment", cluster, "resource", "nvidia.com/gpu")).To(Equal(2.0), "the Colony's inventory")
		g.Expect(f.value("apiary_child_cluster_unreachable", "cluster_deployment", cluster)).To(Equal(0.0))
		g.Expect(f.value("apiary_child_cluster_unreachable", "cluster_deployment", down)).To(Equal(1.0))
		g.Expect(f.value("apiary_child_cluster_caches_open")).To(Equal(1.0), "the Colony's node cache of c1")
		g.Expect(f.value("apiary_workspaces_waiting", "reason", workspacesv1.WaitingForGPUCapacityReason)).To(Equal(0.0))
		g.Expect(f.value("apiary_tenantquota_gpus_hard", "tenantquota", quota.Name, "limit", "all")).To(Equal(8.0))
		g.Expect(f.value("apiary_build_info")).To(Equal(1.0))
		started = f.count("apiary_workspace_time_to_running_seconds")
		g.Expect(started).To(BeNumerically(">=", 0), "exported before any workspace runs")
	})

	first := workspace(ns, "first", class.Name, "fleet-c1", 2)
	create(t, first)
	eventuallyPhase(t, first, workspacesv1.PhaseRunning)
	eventually(t, url, func(g Gomega, f families) {
		g.Expect(f.count("apiary_workspace_time_to_running_seconds")).To(Equal(started + 1))
		g.Expect(f.value("apiary_gpus_admitted", "cluster_deployment", cluster, "resource", "nvidia.com/gpu")).To(Equal(2.0))
		g.Expect(f.value("apiary_gpus_free", "cluster_deployment", cluster, "resource", "nvidia.com/gpu")).To(Equal(0.0))
		g.Expect(f.value("apiary_tenantquota_gpus_used", "tenantquota", quota.Name, "limit", "all")).To(Equal(2.0))
		g.Expect(f.value("apiary_workspaces", "phase", "Running")).To(Equal(1.0))
		g.Expect(f.count("apiary_reconcile_duration_seconds", "kind", "WorkspaceDeployment", "name", "first", "namespace", ns)).To(BeNumerically(">", 0))
		g.Expect(f.count("apiary_reconcile_duration_seconds", "kind", "Colony", "name", "fleet", "namespace", ns)).To(BeNumerically(">", 0))
		g.Expect(f.count("apiary_reconcile_duration_seconds", "kind", "TenantQuota", "name", quota.Name, "namespace", "")).To(BeNumerically(">", 0))
		g.Expect(f.count("apiary_reconcile_duration_seconds", "kind", "WorkspaceClass", "name", class.Name)).To(BeNumerically(">", 0))
	})

	second := workspace(ns, "second", class.Name, "fleet-c1", 1)
	create(t, second)
	eventually(t, url, func(g Gomega, f families) {
		g.Expect(phaseOf(g, second)).To(Equal(workspacesv1.PhaseWaiting))
		g.Expect(f.value("apiary_workspaces_waiting", "reason", workspacesv1.WaitingForGPUCapacityReason)).To(Equal(1.0))
		g.Expect(f.value("apiary_workspaces", "phase", "Waiting")).To(Equal(1.0))
		g.Expect(f.value("apiary_child_cluster_caches_open")).To(Equal(1.0), "the waiting workspace shares the cache, with pods")
		g.Expect(f.count("apiary_workspace_time_to_running_seconds")).To(Equal(started+1), "no one else turned Running")
	})

	// Usage counts while first runs (to the second), and what it held is
	// counted on the quota when its charge ends.
	var held float64
	eventually(t, url, func(g Gomega, f families) {
		held = f.value("apiary_tenant_gpu_seconds_total", "tenant", quota.Name, "resource", "nvidia.com/gpu")
		g.Expect(held).To(BeNumerically(">=", 2), "two GPUs for at least a second")
		g.Expect(f.value("apiary_tenant_cpu_seconds_total", "tenant", quota.Name)).To(BeNumerically(">=", 0))
	})
	g.Expect(env.Client.Delete(ctx, first)).To(Succeed())
	eventuallyPhase(t, second, workspacesv1.PhaseRunning)
	eventually(t, url, func(g Gomega, f families) {
		q := &quotav1alpha1.TenantQuota{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(quota), q)).To(Succeed())
		g.Expect(q.Status.Usage).NotTo(BeNil(), "first's charge ended: its usage is counted on the quota")
		g.Expect(usage.GPUSecondsOf(q.Status.Usage.Total, "nvidia.com/gpu")).To(BeNumerically(">=", held))
		g.Expect(f.value("apiary_tenant_gpu_seconds_total", "tenant", quota.Name, "resource", "nvidia.com/gpu")).
			To(BeNumerically(">", held), "and second's GPU counts on")
	})
	eventually(t, url, func(g Gomega, f families) {
		g.Expect(f.count("apiary_workspace_time_to_running_seconds")).To(Equal(started + 2))
		g.Expect(f.value("apiary_workspaces_waiting", "reason", workspacesv1.WaitingForGPUCapacityReason)).To(Equal(0.0))
		g.Expect(f.value("apiary_gpus_admitted", "cluster_deployment", cluster, "resource", "nvidia.com/gpu")).To(Equal(1.0))
		g.Expect(f.value("apiary_gpus_free", "cluster_deployment", cluster, "resource", "nvidia.com/gpu")).To(Equal(1.0))
		g.Expect(f.value("apiary_tenantquota_gpus_used", "tenantquota", quota.Name, "limit", "all")).To(Equal(1.0))
		g.Expect(f.series("apiary_reconcile_duration_seconds", "name", "first", "namespace", ns)).To(BeEmpty(), "gone with its workspace")
	})

	// The controller-runtime metrics the dashboard and the rules use are served.
	f, err := scrape(url)
	g.Expect(err).NotTo(HaveOccurred())
	for _, name := range controllerRuntimeMetrics(t) {
		g.Expect(f).To(HaveKey(name), "test/monitoring expects controller-runtime to serve %s", name)
	}
}

// controllerRuntimeMetrics reads test/monitoring's list of the
// controller-runtime metrics the dashboard and the rules may use.
func controllerRuntimeMetrics(t *testing.T) []string {
	t.Helper()
	file, err := os.Open(filepath.Join(testenv.RepoRoot(), "test", "monitoring", "testdata", "controller-runtime-metrics.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	var out []string
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		t.Fatal("the list is empty")
	}
	return out
}
