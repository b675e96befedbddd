package chart

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apiaryhq/apiary/test/charttest"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// chartFile reads a file of charts/apiary/files.
func chartFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(chartDir(), "files", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestMonitoringObjectsAreOffByDefault(t *testing.T) {
	g := NewWithT(t)
	objs, err := render(loadChart(t), releaseName, releaseNamespace, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(find(objs, "ConfigMap")).To(BeEmpty())
	g.Expect(find(objs, "PrometheusRule")).To(BeEmpty())
	g.Expect(find(objs, "ClusterRole")).To(HaveLen(2+len(charttest.TenantRoleRules)), "only the manager's, its metrics reader and the tenants'")
}

// TestKubeStateMetricsConfigAndRBAC: the ConfigMap carries the shipped
// configuration verbatim where kube-state-metrics runs, and its ServiceAccount
// may list and watch Apiary's kinds (and CRDs), nothing else.
func TestKubeStateMetricsConfigAndRBAC(t *testing.T) {
	g := NewWithT(t)
	objs, err := render(loadChart(t), releaseName, releaseNamespace, map[string]any{"kubeStateMetrics": map[string]any{
		"enabled": true, "namespace": "monitoring", "serviceAccount": map[string]any{"name": "kps-kube-state-metrics"}}})
	g.Expect(err).NotTo(HaveOccurred())
	cms := find(objs, "ConfigMap")
	g.Expect(cms).To(HaveLen(1))
	cm := convert[corev1.ConfigMap](g, cms[0])
	g.Expect(cm.Namespace).To(Equal("monitoring"))
	g.Expect(cm.Data["config.yaml"]).To(Equal(string(chartFile(t, "kube-state-metrics.yaml"))))

	var role *rbacv1.ClusterRole
	for _, o := range find(objs, "ClusterRole") {
		if strings.HasSuffix(o.GetName(), "-kube-state-metrics") {
			role = convert[rbacv1.ClusterRole](g, o)
		}
	}
	g.Expect(role).NotTo(BeNil())
	g.Expect(role.Rules).To(ConsistOf(
		rbacv1.PolicyRule{APIGroups: []string{"infra.exalsius.ai"}, Resources: []string{"colonies"}, Verbs: []string{"list", "watch"}},
		rbacv1.PolicyRule{APIGroups: []string{"workspaces.exalsius.ai"}, Resources: []string{"workspaceclasses", "workspacedeployments"}, Verbs: []string{"list", "watch"}},
		rbacv1.PolicyRule{APIGroups: []string{"quota.apiary.dev"}, Resources: []string{"tenantquotas"}, Verbs: []string{"list", "watch"}},
		rbacv1.PolicyRule{APIGroups: []string{"apiextensions.k8s.io"}, Resources: []string{"customresourcedefinitions"}, Verbs: []string{"list", "watch"}},
	))
	var binding *rbacv1.ClusterRoleBinding
	for _, o := range find(objs, "ClusterRoleBinding") {
		if o.GetName() == role.Name {
			binding = convert[rbacv1.ClusterRoleBinding](g, o)
		}
	}
	g.Expect(binding).NotTo(BeNil())
	g.Expect(binding.RoleRef.Name).To(Equal(role.Name))
	g.Expect(binding.Subjects).To(ConsistOf(rbacv1.Subject{Kind: "ServiceAccount", Name: "kps-kube-state-metrics", Namespace: "monitoring"}))

	// Without RBAC (kube-state-metrics' own chart grants it), only the ConfigMap.
	objs, err = render(loadChart(t), releaseName, releaseNamespace, map[string]any{"kubeStateMetrics": map[string]any{
		"enabled": true, "rbac": map[string]any{"create": false}}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(find(objs, "ConfigMap")).To(HaveLen(1))
	g.Expect(find(objs, "ConfigMap")[0].GetNamespace()).To(Equal(releaseNamespace))
	g.Expect(find(objs, "ClusterRole")).To(HaveLen(2 + len(charttest.TenantRoleRules)))
}

// TestPrometheusRuleIsTheRuleFile: the PrometheusRule's spec is exactly
// files/prometheus-rules.yaml, the file test/monitoring runs promtool on.
func TestPrometheusRuleIsTheRuleFile(t *testing.T) {
	g := NewWithT(t)
	objs, err := render(loadChart(t), releaseName, releaseNamespace, map[string]any{"prometheusRule": map[string]any{
		"enabled": true, "labels": map[string]any{"release": "kps"}}})
	g.Expect(err).NotTo(HaveOccurred())
	rules := find(objs, "PrometheusRule")
	g.Expect(rules).To(HaveLen(1))
	g.Expect(rules[0].GetAPIVersion()).To(Equal("monitoring.coreos.com/v1"))
	g.Expect(rules[0].GetNamespace()).To(Equal(releaseNamespace))
	g.Expect(rules[0].GetLabels()).To(HaveKeyWithValue("release", "kps"))
	want := map[string]any{}
	g.Expect(yaml.Unmarshal(chartFile(t, "prometheus-rules.yaml"), &want)).To(Succeed())
	g.Expect(want["groups"]).NotTo(BeEmpty())
	g.Expect(rules[0].Object["spec"]).To(Equal(want))
}

func TestServiceMonitorRelabelings(t *testing.T) {
	g := NewWithT(t)
	drop := map[string]any{"action": "drop", "sourceLabels": []any{"__name__"}, "regex": "apiary_reconcile_duration_seconds_bucket"}
	objs, err := render(loadChart(t), releaseName, releaseNamespace, map[string]any{"metrics": map[string]any{
		"serviceMonitor": map[string]any{"enabled": true, "metricRelabelings": []any{drop}}}})
	g.Expect(err).NotTo(HaveOccurred())
	sm := find(objs, "ServiceMonitor")
	g.Expect(sm).To(HaveLen(1))
	endpoints, _, _ := unstructured.NestedSlice(sm[0].Object, "spec", "endpoints")
	g.Expect(endpoints).To(HaveLen(1))
	g.Expect(endpoints[0]).To(HaveKeyWithValue("metricRelabelings", []any{drop}))
	// The metrics are served over HTTPS to authorised tokens (metrics.secure).
	g.Expect(endpoints[0]).To(HaveKeyWithValue("scheme", "https"))
	g.Expect(endpoints[0]).To(HaveKeyWithValue("bearerTokenFile", "/var/run/secrets/kubernetes.io/serviceaccount/token"))
	var reader []string
	for _, r := range find(objs, "ClusterRole") {
		if r.GetName() == releaseName+"-metrics-reader" {
			reader = append(reader, r.GetName())
			rules, _, _ := unstructured.NestedSlice(r.Object, "rules")
			g.Expect(rules).To(Equal([]any{map[string]any{"nonResourceURLs": []any{"/metrics"}, "verbs": []any{"get"}}}))
		}
	}
	g.Expect(reader).To(HaveLen(1), "a ClusterRole to bind Prometheus to")
}

func TestGrafanaDashboardConfigMap(t *testing.T) {
	g := NewWithT(t)
	ch := loadChart(t)
	objs, err := render(ch, releaseName, releaseNamespace, map[string]any{"grafanaDashboard": map[string]any{"enabled": true}})
	g.Expect(err).NotTo(HaveOccurred())
	cm := convert[corev1.ConfigMap](g, find(objs, "ConfigMap")[0])
	g.Expect(cm.Labels).To(HaveKeyWithValue("grafana_dashboard", "1"), "kube-prometheus-stack's sidecar default")
	g.Expect(cm.Data["apiary.json"]).To(Equal(strings.TrimRight(string(chartFile(t, "grafana-dashboard.json")), "\n")))
	dash := map[string]any{}
	g.Expect(json.Unmarshal([]byte(cm.Data["apiary.json"]), &dash)).To(Succeed())
	g.Expect(dash["uid"]).To(Equal("apiary-overview"))

	objs, err = render(ch, releaseName, releaseNamespace, map[string]any{"grafanaDashboard": map[string]any{"enabled": true,
		"namespace": "grafana", "label": "grafana.com/dashboard", "labelValue": "apiary", "annotations": map[string]any{"grafana_folder": "Apiary"}}})
	g.Expect(err).NotTo(HaveOccurred())
	cm = convert[corev1.ConfigMap](g, find(objs, "ConfigMap")[0])
	g.Expect(cm.Namespace).To(Equal("grafana"))
	g.Expect(cm.Labels).To(HaveKeyWithValue("grafana.com/dashboard", "apiary"))
	g.Expect(cm.Annotations).To(HaveKeyWithValue("grafana_folder", "Apiary"))
}
