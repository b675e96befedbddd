package monitoring

import (
	"bytes"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-state-metrics/v2/pkg/customresourcestate"
	generator "k8s.io/kube-state-metrics/v2/pkg/metric_generator"
	metricsstore "k8s.io/kube-state-metrics/v2/pkg/metrics_store"
	"k8s.io/utils/ptr"
	yaml "sigs.k8s.io/yaml/goyaml.v3"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	apiaryscheme "github.com/apiaryhq/apiary/internal/scheme"
)

// TestKSMConfigLoads: kube-state-metrics' own loader accepts the file.
func TestKSMConfigLoads(t *testing.T) {
	g := NewWithT(t)
	_, err := customresourcestate.FromConfig(yaml.NewDecoder(bytes.NewReader(readRepoFile(t, ksmConfigFile))), nil)
	g.Expect(err).NotTo(HaveOccurred())
	resources := ksmResources(t)
	kinds := []string{}
	for _, r := range resources {
		kinds = append(kinds, r.GroupVersionKind.Kind)
		g.Expect(r.GetMetricNamePrefix()).To(Equal("apiary"))
	}
	g.Expect(kinds).To(ConsistOf("Colony", "WorkspaceClass", "WorkspaceDeployment", "TenantQuota"))
}

// scrapeKSM runs kube-state-metrics' store and writer, as its /metrics
// handler does, over objects, and parses what it writes.
func scrapeKSM(t *testing.T, objs ...runtime.Object) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	var writers metricsstore.MetricsWriterList
	for _, r := range ksmResources(t) {
		factory, err := customresourcestate.NewCustomResourceMetrics(r)
		if err != nil {
			t.Fatal(err)
		}
		gens := factory.MetricFamilyGenerators()
		store := metricsstore.NewMetricsStore(generator.ExtractMetricFamilyHeaders(gens), generator.ComposeMetricGenFuncs(gens))
		gvk := schema.GroupVersionKind(r.GroupVersionKind)
		for _, o := range objs {
			u := toUnstructured(t, o)
			if u.GroupVersionKind() == gvk {
				if err := store.Add(u); err != nil {
					t.Fatal(err)
				}
			}
		}
		writers = append(writers, metricsstore.NewMetricsWriter(factory.Name(), store))
	}
	writers = metricsstore.SanitizeHeaders(expfmt.NewFormat(expfmt.TypeTextPlain), writers)
	var buf bytes.Buffer
	for _, w := range writers {
		if err := w.WriteAll(&buf); err != nil {
			t.Fatal(err)
		}
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatalf("parsing kube-state-metrics' output: %v\n%s", err, buf.String())
	}
	return fams, buf.String()
}

func toUnstructured(t *testing.T, o runtime.Object) *unstructured.Unstructured {
	t.Helper()
	gvks, _, err := apiaryscheme.New().ObjectKinds(o)
	if err != nil {
		t.Fatal(err)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvks[0])
	return u
}

// sample returns the value of the one series of a family whose labels
// include want, failing when there is none or more.
func sample(g Gomega, fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	f := fams[name]
	g.ExpectWithOffset(1, f).NotTo(BeNil(), "no family %s", name)
	var found []float64
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		ok := true
		for k, v := range want {
			ok = ok && labels[k] == v
		}
		if ok {
			// A family whose header another kind's empty store would have
			// written comes untyped: kube-state-metrics writes each header once.
			found = append(found, m.GetGauge().GetValue()+m.GetUntyped().GetValue())
		}
	}
	g.ExpectWithOffset(1, found).To(HaveLen(1), "series of %s with %v", name, want)
	return found[0]
}

// stateObjects are Apiary objects in states the controllers write.
func stateObjects(updated time.Time) []runtime.Object {
	colony := &infrav1.Colony{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "fleet"}, Spec: infrav1.ColonySpec{Suspend: true}}
	colony.Status = infrav1.ColonyStatus{Phase: infrav1.ColonyPhaseDegraded, TotalClusters: 2, ReadyClusters: 1,
		Clusters: []infrav1.ColonyClusterStatus{
			{ClusterName: "a", ClusterDeploymentName: "fleet-a", Ready: true, Reason: "Ready"},
			{ClusterName: "b", ClusterDeploymentName: "fleet-b", Reason: "ClusterFailed"}},
		GPUInventory: map[string]infrav1.ClusterGPUInventory{"fleet-a": {LastUpdated: &metav1.Time{Time: updated},
			Offerings: []infrav1.GPUOffering{{Vendor: "NVIDIA", ResourceName: "nvidia.com/gpu", Total: 8, Nodes: 1}}}}}
	conditions.MarkFalse(colony, commonv1.ReadyCondition, "ClusterFailed", "b failed")
	conditions.MarkTrue(colony, infrav1.GPUInventoryReadyCondition, infrav1.InventoryScannedReason, "current")

	class := &workspacesv1.WorkspaceClass{ObjectMeta: metav1.ObjectMeta{Name: "jupyter-v1"}, Spec: workspacesv1.WorkspaceClassSpec{
		DisplayName: "Jupyter", ServiceTemplate: workspacesv1.ServiceTemplateRef{Name: "jupyter-1-0-0"}}}
	class.Status.Valid = true
	conditions.MarkTrue(class, commonv1.ReadyCondition, "Valid", "valid")

	failed := &workspacesv1.WorkspaceDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "nb"},
		Spec: workspacesv1.WorkspaceDeploymentSpec{WorkspaceClassRef: "jupyter-v1",
			ClusterDeploymentRef: workspacesv1.ClusterDeploymentReference{Name: "fleet-a"}}}
	failed.Status = workspacesv1.WorkspaceDeploymentStatus{Phase: workspacesv1.PhaseFailed,
		FailureContext: &workspacesv1.FailureContext{PhaseWhenFailed: workspacesv1.PhaseDeploying, Reason: workspacesv1.HelmReleaseFailedReason},
		ResolvedResources: &workspacesv1.WorkspaceResourceSpec{Replicas: ptr.To[int32](2),
			PerReplica: &workspacesv1.PerReplicaResources{GPUCount: ptr.To[int32](4)}},
		Admission: &workspacesv1.WorkspaceAdmission{Cluster: "team-a/fleet-a", ResourceName: "nvidia.com/gpu",
			GPUsPerReplica: 4, Replicas: 2, AdmittedAt: metav1.Time{Time: updated}}}
	conditions.MarkStalled(failed, workspacesv1.HelmReleaseFailedReason, "release failed")
	conditions.MarkFalse(failed, commonv1.ReadyCondition, workspacesv1.HelmReleaseFailedReason, "release failed")
	conditions.MarkTrue(failed, workspacesv1.GPUCapacityCondition, workspacesv1.ResourcesAvailableReason, "reserved")

	q := &quotav1alpha1.TenantQuota{ObjectMeta: metav1.ObjectMeta{Name: "team-a"}, Spec: quotav1alpha1.TenantQuotaSpec{
		Hard: quotav1alpha1.QuotaLimits{Workspaces: ptr.To[int64](10), CPU: ptr.To(resource.MustParse("16")), Memory: ptr.To(resource.MustParse("64Gi")),
			GPUs: []quotav1alpha1.GPULimit{{Name: "h100", ResourceName: "nvidia.com/gpu", GPUModel: "H100", Count: 8}}}}}
	q.Status.Hard = *q.Spec.Hard.DeepCopy() // what the controller enforces
	q.Status.Used = quotav1alpha1.QuotaUsage{Workspaces: 3, CPU: ptr.To(resource.MustParse("1500m")), Memory: ptr.To(resource.MustParse("8Gi")),
		GPUs: []quotav1alpha1.GPUUsage{{Name: "h100", Count: 6}}}
	conditions.MarkTrue(q, commonv1.ReadyCondition, quotav1alpha1.EnforcedReason, "enforced")
	conditions.MarkFalse(q, quotav1alpha1.WithinLimitsCondition, quotav1alpha1.OverLimitReason, "over")
	return []runtime.Object{colony, class, failed, q}
}

// TestKSMConfigProducesTheSeries runs kube-state-metrics' own store over
// objects as the controllers write them and reads back what a user queries.
func TestKSMConfigProducesTheSeries(t *testing.T) {
	g := NewWithT(t)
	updated := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	fams, text := scrapeKSM(t, stateObjects(updated)...)
	t.Log(text)

	colony := map[string]string{"customresource_kind": "Colony", "customresource_group": "infra.exalsius.ai", "name": "fleet", "exported_namespace": "team-a"}
	with := func(base map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	g.Expect(sample(g, fams, "apiary_resource_info", with(colony, "phase", "Degraded", "ready", "False", "reason", "ClusterFailed", "suspended", "true"))).To(Equal(1.0))
	g.Expect(sample(g, fams, "apiary_resource_condition", with(colony, "type", "Ready", "status", "False", "reason", "ClusterFailed"))).To(Equal(0.0))
	g.Expect(sample(g, fams, "apiary_resource_condition", with(colony, "type", "GPUInventoryReady", "status", "True"))).To(Equal(1.0))
	g.Expect(sample(g, fams, "apiary_colony_clusters", colony)).To(Equal(2.0))
	g.Expect(sample(g, fams, "apiary_colony_clusters_ready", colony)).To(Equal(1.0))
	g.Expect(sample(g, fams, "apiary_colony_cluster_ready", with(colony, "cluster", "a", "cluster_deployment", "fleet-a", "reason", "Ready"))).To(Equal(1.0))
	g.Expect(sample(g, fams, "apiary_colony_cluster_ready", with(colony, "cluster", "b", "reason", "ClusterFailed"))).To(Equal(0.0))
	g.Expect(sample(g, fams, "apiary_colony_gpu_inventory_last_updated_timestamp_seconds", with(colony, "cluster_deployment", "fleet-a"))).
		To(Equal(float64(updated.Unix())))

	class := map[string]string{"customresource_kind": "WorkspaceClass", "name": "jupyter-v1"}
	g.Expect(sample(g, fams, "apiary_resource_info", with(class, "ready", "True", "valid", "true", "service_template", "jupyter-1-0-0"))).To(Equal(1.0))

	ws := map[string]string{"customresource_kind": "WorkspaceDeployment", "name": "nb", "exported_namespace": "team-a"}
	g.Expect(sample(g, fams, "apiary_resource_info", with(ws, "phase", "Failed", "ready", "False", "reason", "HelmReleaseFailed",
		"failure_reason", "HelmReleaseFailed", "workspace_class", "jupyter-v1", "cluster_deployment", "fleet-a"))).To(Equal(1.0))
	g.Expect(sample(g, fams, "apiary_resource_condition", with(ws, "type", "Stalled", "status", "True"))).To(Equal(1.0))
	g.Expect(sample(g, fams, "apiary_workspacedeployment_replicas", ws)).To(Equal(2.0))
	g.Expect(sample(g, fams, "apiary_workspacedeployment_gpus_per_replica", ws)).To(Equal(4.0))
	g.Expect(sample(g, fams, "apiary_workspacedeployment_admitted_gpus_per_replica", with(ws, "admitted_cluster", "team-a/fleet-a", "resource", "nvidia.com/gpu"))).To(Equal(4.0))
	g.Expect(sample(g, fams, "apiary_workspacedeployment_admitted_replicas", with(ws, "admitted_cluster", "team-a/fleet-a"))).To(Equal(2.0))

	q := map[string]string{"customresource_kind": "TenantQuota", "name": "team-a"}
	g.Expect(sample(g, fams, "apiary_resource_info", with(q, "ready", "True", "within_limits", "False"))).To(Equal(1.0))
	g.Expect(sample(g, fams, "apiary_tenantquota_status_hard_workspaces", q)).To(Equal(10.0))
	g.Expect(sample(g, fams, "apiary_tenantquota_status_used_workspaces", q)).To(Equal(3.0))
	g.Expect(sample(g, fams, "apiary_tenantquota_status_hard_gpus", with(q, "limit", "h100", "resource", "nvidia.com/gpu"))).To(Equal(8.0))
	g.Expect(sample(g, fams, "apiary_tenantquota_status_used_gpus", with(q, "limit", "h100"))).To(Equal(6.0))
	g.Expect(sample(g, fams, "apiary_tenantquota_status_hard_cpu_cores", q)).To(Equal(16.0))
	g.Expect(sample(g, fams, "apiary_tenantquota_status_used_cpu_cores", q)).To(Equal(1.5))
	g.Expect(sample(g, fams, "apiary_tenantquota_status_hard_memory_bytes", q)).To(Equal(64.0 * (1 << 30)))
	g.Expect(sample(g, fams, "apiary_tenantquota_status_used_memory_bytes", q)).To(Equal(8.0 * (1 << 30)))

	// No family of the configuration is dead: each yields a series from
	// objects in these states.
	var empty []string
	for name := range ksmFamilies(t) {
		if f := fams[name]; f == nil || len(f.GetMetric()) == 0 {
			empty = append(empty, name)
		}
	}
	sort.Strings(empty)
	g.Expect(empty).To(BeEmpty(), "families without a series")
}

// TestKSMConfigOnFreshObjects: objects without a status yet (just created)
// give their info series and nothing that fails.
func TestKSMConfigOnFreshObjects(t *testing.T) {
	g := NewWithT(t)
	fams, _ := scrapeKSM(t, &workspacesv1.WorkspaceDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "team-b", Name: "new"},
		Spec: workspacesv1.WorkspaceDeploymentSpec{WorkspaceClassRef: "jupyter-v1", ClusterDeploymentRef: workspacesv1.ClusterDeploymentReference{Name: "c1"}}})
	g.Expect(sample(g, fams, "apiary_resource_info", map[string]string{"name": "new", "workspace_class": "jupyter-v1"})).To(Equal(1.0))
	for name, f := range fams {
		if name != "apiary_resource_info" {
			g.Expect(f.GetMetric()).To(BeEmpty(), fmt.Sprintf("%s of an object with no status", name))
		}
	}
}
