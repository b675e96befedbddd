package chart

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/apiaryhq/apiary/internal/testenv"
)

// convert turns a rendered object into its typed form.
func convert[T any](g Gomega, u *unstructured.Unstructured) *T {
	out := new(T)
	g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out)).To(Succeed(), u.GetKind())
	return out
}

func TestChartLints(t *testing.T) {
	g := NewWithT(t)
	linter := lint.All(chartDir(), nil, releaseNamespace, false)
	for _, m := range linter.Messages {
		t.Log(m.Error())
		g.Expect(m.Severity).To(BeNumerically("<", support.ErrorSev), m.Error())
	}
}

func TestDefaultsAreHardened(t *testing.T) {
	g := NewWithT(t)
	ch := loadChart(t)
	objs, err := render(ch, releaseName, releaseNamespace, nil)
	g.Expect(err).NotTo(HaveOccurred())

	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.GetKind()]++
		if o.GetKind() != "ClusterRole" && o.GetKind() != "ClusterRoleBinding" {
			g.Expect(o.GetNamespace()).To(Equal(releaseNamespace), "%s %s", o.GetKind(), o.GetName())
		}
	}
	g.Expect(kinds).To(Equal(map[string]int{"ServiceAccount": 1, "ClusterRole": 1, "ClusterRoleBinding": 1,
		"Role": 1, "RoleBinding": 1, "Service": 1, "Deployment": 1}))

	d := convert[appsv1.Deployment](g, find(objs, "Deployment")[0])
	pod := d.Spec.Template.Spec
	g.Expect(pod.ServiceAccountName).To(Equal(find(objs, "ServiceAccount")[0].GetName()))
	g.Expect(pod.SecurityContext.RunAsNonRoot).To(HaveValue(BeTrue()))
	g.Expect(pod.SecurityContext.SeccompProfile).NotTo(BeNil())
	g.Expect(pod.SecurityContext.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault))
	g.Expect(pod.Containers).NotTo(BeEmpty())
	for _, c := range append(pod.InitContainers, pod.Containers...) {
		sc := c.SecurityContext
		g.Expect(sc).NotTo(BeNil(), c.Name)
		g.Expect(sc.ReadOnlyRootFilesystem).To(HaveValue(BeTrue()), c.Name)
		g.Expect(sc.AllowPrivilegeEscalation).To(HaveValue(BeFalse()), c.Name)
		g.Expect(sc.Capabilities.Drop).To(ContainElement(corev1.Capability("ALL")), c.Name)
		g.Expect(sc.RunAsNonRoot == nil || *sc.RunAsNonRoot).To(BeTrue(), c.Name)
	}
	c := pod.Containers[0]
	g.Expect(c.Image).To(Equal("ghcr.io/apiaryhq/apiary:" + ch.Metadata.AppVersion))
	g.Expect(c.LivenessProbe.HTTPGet.Path).To(Equal("/healthz"))
	g.Expect(c.ReadinessProbe.HTTPGet.Path).To(Equal("/readyz"))
	g.Expect(c.Resources.Requests).NotTo(BeEmpty())
	g.Expect(c.Resources.Limits).NotTo(BeEmpty())
	g.Expect(c.VolumeMounts).To(ContainElement(HaveField("MountPath", "/tmp")))
	g.Expect(pod.Volumes).To(ContainElement(And(HaveField("Name", "tmp"), HaveField("EmptyDir", Not(BeNil())))))

	svc := convert[corev1.Service](g, find(objs, "Service")[0])
	g.Expect(c.Args).To(ContainElement("--child-server-https-only=true"), "child kubeconfigs tenants write reach https servers only")
	g.Expect(svc.Spec.Selector).To(Equal(d.Spec.Selector.MatchLabels))
	g.Expect(svc.Spec.Ports).To(ContainElement(HaveField("Name", "metrics")))
}

func TestRBACHasNoWildcards(t *testing.T) {
	for name, vals := range map[string]map[string]any{
		"defaults":           nil,
		"no leader election": {"leaderElection": map[string]any{"enabled": false}},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			objs, err := render(loadChart(t), releaseName, releaseNamespace, vals)
			g.Expect(err).NotTo(HaveOccurred())
			for _, o := range append(find(objs, "ClusterRole"), find(objs, "Role")...) {
				for _, r := range convert[rbacv1.ClusterRole](g, o).Rules {
					for _, field := range [][]string{r.APIGroups, r.Resources, r.Verbs, r.ResourceNames, r.NonResourceURLs} {
						for _, v := range field {
							g.Expect(v).NotTo(ContainSubstring("*"), "%s %s rule %v", o.GetKind(), o.GetName(), r)
						}
					}
				}
			}
			for _, o := range append(find(objs, "ClusterRoleBinding"), find(objs, "RoleBinding")...) {
				ref := convert[rbacv1.RoleBinding](g, o).RoleRef
				g.Expect(ref.Name).NotTo(BeElementOf("cluster-admin", "admin", "edit"), o.GetName())
			}
		})
	}
}

// TestClusterRoleMatchesGeneratedRBAC is the drift check: the chart's
// ClusterRole carries exactly the rules controller-gen generates from the
// controllers' markers into config/rbac/role.yaml.
func TestClusterRoleMatchesGeneratedRBAC(t *testing.T) {
	g := NewWithT(t)
	generated := filepath.Join(testenv.RepoRoot(), "config", "rbac", "role.yaml")
	data, err := os.ReadFile(generated)
	g.Expect(err).NotTo(HaveOccurred())
	want := &rbacv1.ClusterRole{}
	g.Expect(yaml.Unmarshal(data, want)).To(Succeed())
	g.Expect(want.Rules).NotTo(BeEmpty())

	objs, err := render(loadChart(t), releaseName, releaseNamespace, nil)
	g.Expect(err).NotTo(HaveOccurred())
	roles := find(objs, "ClusterRole")
	g.Expect(roles).To(HaveLen(1))
	got := convert[rbacv1.ClusterRole](g, roles[0])
	g.Expect(got.Rules).To(Equal(want.Rules),
		"charts/apiary/files/role.yaml differs from config/rbac/role.yaml: run `make manifests`")

	bindings := find(objs, "ClusterRoleBinding")
	g.Expect(bindings).To(HaveLen(1))
	b := convert[rbacv1.ClusterRoleBinding](g, bindings[0])
	g.Expect(b.RoleRef.Name).To(Equal(got.Name))
	g.Expect(b.Subjects).To(ConsistOf(rbacv1.Subject{Kind: "ServiceAccount",
		Name: find(objs, "ServiceAccount")[0].GetName(), Namespace: releaseNamespace}))
}

func TestArgsFollowValues(t *testing.T) {
	tests := []struct {
		name    string
		vals    map[string]any
		want    []string
		notWant []string
		check   func(g Gomega, d *appsv1.Deployment)
	}{{
		name: "defaults",
		want: []string{"--leader-elect=true", "--leader-election-id=apiary.infra.exalsius.ai",
			"--leader-election-namespace=" + releaseNamespace, "--metrics-bind-address=:8080",
			"--health-probe-bind-address=:8081", "--colony-concurrency=4", "--workspaceclass-concurrency=2",
			"--workspacedeployment-concurrency=8", "--tenantquota-concurrency=2", "--gpu-queueing-policy=StrictFIFO",
			"--no-cross-namespace-refs=true", "--zap-log-level=info", "--zap-encoder=json",
			"--workspace-gateway-name=istio-ingressgateway", "--workspace-gateway-namespace=istio-system",
			"--workspace-mesh-mode=ambient", "--workspace-waypoint-enabled=true", "--workspace-waypoint-namespace=istio-system",
			"--adopt-field-managers=manager", "--child-server-https-only=true"},
		notWant: []string{"--bundle-dir", "--gpu-inventory-interval", "--crd-check-interval", "--prerequisite-grace-period",
			"--child-server-allow"},
	}, {
		name: "every knob",
		vals: map[string]any{
			"replicaCount":         3,
			"image":                map[string]any{"repository": "registry.example/apiary", "tag": "v9.9.9"},
			"leaderElection":       map[string]any{"id": "my-lease"},
			"metrics":              map[string]any{"port": 9090, "service": map[string]any{"port": 9090}},
			"health":               map[string]any{"port": 9091},
			"concurrency":          map[string]any{"colony": 1, "workspaceClass": 3, "workspaceDeployment": 16, "tenantQuota": 5},
			"gpuAdmission":         map[string]any{"queueingPolicy": "BestEffortFIFO"},
			"noCrossNamespaceRefs": false,
			"gpuInventoryInterval": "2m30s",
			"crdCheckInterval":     "5s",
			// Children's servers: names, a wildcard, networks.
			"childClusters": map[string]any{"httpsOnly": false,
				"allowedServers": []any{"api.example.com", "*.child.example", "10.0.0.0/8", "fd00::/8", "192.168.1.7"}},
			// Unused prerequisites are removed after a day.
			"prerequisiteGracePeriod": "24h",
			// Fields of two client-side writers are taken over.
			"adoption": map[string]any{"fieldManagers": []any{"manager", "exalsius-operator"}},
			"bundles": map[string]any{"dir": "/etc/apiary/bundles", "configMap": map[string]any{
				"name": "my-bundles", "items": []any{map[string]any{"key": "jupyter-values.yaml", "path": "jupyter/values.yaml"}}}},
			"log":          map[string]any{"level": "debug", "encoding": "console"},
			"extraArgs":    []any{"--zap-stacktrace-level=panic"},
			"nodeSelector": map[string]any{"kubernetes.io/os": "linux"},
			"tolerations":  []any{map[string]any{"key": "dedicated", "operator": "Exists"}},
		},
		want: []string{"--leader-elect=true", "--leader-election-id=my-lease", "--metrics-bind-address=:9090",
			"--health-probe-bind-address=:9091", "--colony-concurrency=1", "--workspaceclass-concurrency=3",
			"--workspacedeployment-concurrency=16", "--tenantquota-concurrency=5", "--gpu-queueing-policy=BestEffortFIFO",
			"--no-cross-namespace-refs=false", "--gpu-inventory-interval=2m30s", "--crd-check-interval=5s", "--bundle-dir=/etc/apiary/bundles",
			"--prerequisite-grace-period=24h", "--adopt-field-managers=manager,exalsius-operator",
			"--child-server-https-only=false", "--child-server-allow=api.example.com,*.child.example,10.0.0.0/8,fd00::/8,192.168.1.7",
			"--zap-log-level=debug", "--zap-encoder=console", "--zap-stacktrace-level=panic"},
		check: func(g Gomega, d *appsv1.Deployment) {
			g.Expect(d.Spec.Replicas).To(HaveValue(BeEquivalentTo(3)))
			pod := d.Spec.Template.Spec
			g.Expect(pod.Containers[0].Image).To(Equal("registry.example/apiary:v9.9.9"))
			g.Expect(pod.Containers[0].VolumeMounts).To(ContainElement(And(
				HaveField("Name", "bundles"), HaveField("MountPath", "/etc/apiary/bundles"), HaveField("ReadOnly", true))))
			g.Expect(pod.Volumes).To(ContainElement(And(HaveField("Name", "bundles"),
				HaveField("ConfigMap.Name", "my-bundles"),
				HaveField("ConfigMap.Items", ConsistOf(corev1.KeyToPath{Key: "jupyter-values.yaml", Path: "jupyter/values.yaml"})))))
			g.Expect(pod.NodeSelector).To(HaveKeyWithValue("kubernetes.io/os", "linux"))
			g.Expect(pod.Tolerations).To(HaveLen(1))
			g.Expect(pod.Containers[0].Ports).To(ContainElement(HaveField("ContainerPort", int32(9090))))
		},
	}, {
		name: "adoption off",
		vals: map[string]any{"adoption": map[string]any{"fieldManagers": []any{}}},
		want: []string{"--adopt-field-managers="},
	}, {
		name: "mesh",
		vals: map[string]any{"workspaceAccess": map[string]any{"mesh": map[string]any{"mode": "sidecar",
			"waypoints": map[string]any{"enabled": false, "namespace": "mesh-system"}}}},
		want: []string{"--workspace-mesh-mode=sidecar", "--workspace-waypoint-enabled=false", "--workspace-waypoint-namespace=mesh-system",
			"--workspace-gateway-name=istio-ingressgateway"},
	}, {
		name: "git delivery",
		vals: map[string]any{"delivery": map[string]any{"mode": "git", "git": map[string]any{
			"gitRepositoryRef": "flux-system/fleet", "kustomizationRef": "flux-system/apiary",
			"path": "clusters/mgmt/apiary", "routesPath": "clusters/regions", "commitWindow": "5s", "signingKeySecretRef": "apiary-system/signing",
			"sops": map[string]any{"ageRecipients": []any{ageRecipient, ageRecipient2}},
		}}},
		want: []string{"--delivery=git", "--git-repository=flux-system/fleet", "--git-kustomization=flux-system/apiary",
			"--git-path=clusters/mgmt/apiary", "--git-routes-path=clusters/regions", "--git-commit-window=5s", "--git-checkout-dir=/var/lib/apiary/git",
			"--git-signing-key-secret=apiary-system/signing",
			"--sops-age-recipients=" + ageRecipient + "," + ageRecipient2, "--git-author-name=Apiary"},
		notWant: []string{"--git-url", "--git-secret"},
		check: func(g Gomega, d *appsv1.Deployment) {
			pod := d.Spec.Template.Spec
			g.Expect(pod.Containers[0].VolumeMounts).To(ContainElement(And(
				HaveField("Name", "git"), HaveField("MountPath", "/var/lib/apiary/git"))))
			g.Expect(pod.Volumes).To(ContainElement(And(HaveField("Name", "git"), HaveField("EmptyDir", Not(BeNil())))))
		},
	}, {
		name:    "direct delivery has no Git settings",
		want:    []string{"--delivery=direct"},
		notWant: []string{"--git-", "--sops-"},
		check: func(g Gomega, d *appsv1.Deployment) {
			g.Expect(d.Spec.Template.Spec.Volumes).NotTo(ContainElement(HaveField("Name", "git")))
		},
	}, {
		name:    "metrics and leader election off",
		vals:    map[string]any{"metrics": map[string]any{"enabled": false}, "leaderElection": map[string]any{"enabled": false}},
		want:    []string{"--metrics-bind-address=0", "--leader-elect=false"},
		notWant: []string{"--leader-election-id", "--leader-election-namespace"},
		check: func(g Gomega, d *appsv1.Deployment) {
			g.Expect(d.Spec.Template.Spec.Containers[0].Ports).NotTo(ContainElement(HaveField("Name", "metrics")))
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			objs, err := render(loadChart(t), releaseName, releaseNamespace, tt.vals)
			g.Expect(err).NotTo(HaveOccurred())
			deps := find(objs, "Deployment")
			g.Expect(deps).To(HaveLen(1))
			d := convert[appsv1.Deployment](g, deps[0])
			args := d.Spec.Template.Spec.Containers[0].Args
			g.Expect(args).To(ContainElements(tt.want))
			for _, nw := range tt.notWant {
				g.Expect(args).NotTo(ContainElement(HavePrefix(nw)))
			}
			if tt.check != nil {
				tt.check(g, d)
			}
			expectManagerAccepts(t, g, args)
		})
	}
}

// Two age recipients (public keys) for the Git delivery values.
const (
	ageRecipient  = "age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p"
	ageRecipient2 = "age1lggyhqrw2nlhcxprm67z43rta597azn8gknawjehu9d9dl0jq3yqqvfafg"
)

func TestGitDeliveryRBACOnlyInGitMode(t *testing.T) {
	g := NewWithT(t)
	ch := loadChart(t)
	fluxRules := func(vals map[string]any) []rbacv1.PolicyRule {
		objs, err := render(ch, releaseName, releaseNamespace, vals)
		g.Expect(err).NotTo(HaveOccurred())
		var out []rbacv1.PolicyRule
		for _, r := range convert[rbacv1.ClusterRole](g, find(objs, "ClusterRole")[0]).Rules {
			for _, grp := range r.APIGroups {
				if strings.HasSuffix(grp, ".toolkit.fluxcd.io") {
					out = append(out, r)
				}
			}
		}
		return out
	}
	g.Expect(fluxRules(nil)).To(BeEmpty())
	objs, err := render(ch, releaseName, releaseNamespace, map[string]any{"delivery": map[string]any{"tenantGit": true}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(convert[rbacv1.ClusterRole](g, find(objs, "ClusterRole")[0]).Rules).To(ContainElement(
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"}}))
	g.Expect(convert[appsv1.Deployment](g, find(objs, "Deployment")[0]).Spec.Template.Spec.Containers[0].Args).To(
		ContainElements("--delivery=direct", "--tenant-git=true"))
	rules := fluxRules(map[string]any{"delivery": map[string]any{"mode": "git", "git": map[string]any{"url": "ssh://git@example.com/fleet.git"}}})
	g.Expect(rules).To(ConsistOf(
		rbacv1.PolicyRule{APIGroups: []string{"kustomize.toolkit.fluxcd.io"}, Resources: []string{"kustomizations"}, Verbs: []string{"get", "list", "watch"}},
		rbacv1.PolicyRule{APIGroups: []string{"source.toolkit.fluxcd.io"}, Resources: []string{"gitrepositories"}, Verbs: []string{"get", "patch"}},
	))
}

// TestGitOpsExampleValues renders the chart with the Git mode values shipped
// in gitops-examples: they pass the schema and reach the manager's flags.
func TestGitOpsExampleValues(t *testing.T) {
	g := NewWithT(t)
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "gitops-examples", "apiary", "values-git.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	vals := map[string]any{}
	g.Expect(yaml.Unmarshal(data, &vals)).To(Succeed())
	objs, err := render(loadChart(t), releaseName, releaseNamespace, vals)
	g.Expect(err).NotTo(HaveOccurred())
	d := convert[appsv1.Deployment](g, find(objs, "Deployment")[0])
	g.Expect(d.Spec.Template.Spec.Containers[0].Args).To(ContainElements("--delivery=git",
		"--git-repository=flux-system/fleet", "--git-kustomization=flux-system/apiary-rendered",
		"--git-path=clusters/mgmt/apiary"))
}

func TestOptionalObjects(t *testing.T) {
	g := NewWithT(t)
	ch := loadChart(t)
	objs, err := render(ch, releaseName, releaseNamespace, map[string]any{
		"metrics": map[string]any{"serviceMonitor": map[string]any{"enabled": true, "labels": map[string]any{"release": "prom"}}},
	})
	g.Expect(err).NotTo(HaveOccurred())
	sm := find(objs, "ServiceMonitor")
	g.Expect(sm).To(HaveLen(1))
	g.Expect(sm[0].GetLabels()).To(HaveKeyWithValue("release", "prom"))

	objs, err = render(ch, releaseName, releaseNamespace, map[string]any{
		"rbac": map[string]any{"create": false}, "serviceAccount": map[string]any{"create": false, "name": "existing"},
		"metrics": map[string]any{"service": map[string]any{"enabled": false}},
	})
	g.Expect(err).NotTo(HaveOccurred())
	for _, kind := range []string{"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ServiceAccount", "Service", "ServiceMonitor"} {
		g.Expect(find(objs, kind)).To(BeEmpty(), kind)
	}
	d := convert[appsv1.Deployment](g, find(objs, "Deployment")[0])
	g.Expect(d.Spec.Template.Spec.ServiceAccountName).To(Equal("existing"))
}

func TestSchemaRejectsBadValues(t *testing.T) {
	tests := []struct {
		name string
		vals map[string]any
		// want are substrings of the error: the field's path and the complaint.
		want []string
	}{
		{"unknown top-level key", map[string]any{"replicas": 2}, []string{"replicas"}},
		{"unknown nested key", map[string]any{"concurrency": map[string]any{"colonies": 2}}, []string{"/concurrency", "colonies"}},
		{"negative concurrency", map[string]any{"concurrency": map[string]any{"colony": -1}}, []string{"/concurrency/colony", "minimum"}},
		{"zero concurrency", map[string]any{"concurrency": map[string]any{"workspaceDeployment": 0}}, []string{"/concurrency/workspaceDeployment", "minimum"}},
		{"concurrency as a string", map[string]any{"concurrency": map[string]any{"workspaceClass": "two"}}, []string{"/concurrency/workspaceClass", "integer"}},
		{"unknown GPU queueing policy", map[string]any{"gpuAdmission": map[string]any{"queueingPolicy": "LIFO"}}, []string{"/gpuAdmission/queueingPolicy"}},
		{"replicas as a string", map[string]any{"replicaCount": "3"}, []string{"/replicaCount", "integer"}},
		{"negative replicas", map[string]any{"replicaCount": -1}, []string{"/replicaCount", "minimum"}},
		{"leader election off with replicas", map[string]any{"replicaCount": 2, "leaderElection": map[string]any{"enabled": false}}, []string{"/leaderElection/enabled"}},
		{"bool as a string", map[string]any{"noCrossNamespaceRefs": "yes"}, []string{"/noCrossNamespaceRefs", "boolean"}},
		{"bad duration", map[string]any{"gpuInventoryInterval": "5 minutes"}, []string{"/gpuInventoryInterval"}},
		{"bad grace period", map[string]any{"prerequisiteGracePeriod": "1 day"}, []string{"/prerequisiteGracePeriod"}},
		{"bad field manager", map[string]any{"adoption": map[string]any{"fieldManagers": []any{"a,b"}}}, []string{"/adoption/fieldManagers/0"}},
		{"https only as a string", map[string]any{"childClusters": map[string]any{"httpsOnly": "yes"}}, []string{"/childClusters/httpsOnly", "boolean"}},
		{"allowed server with a comma", map[string]any{"childClusters": map[string]any{"allowedServers": []any{"a.example,b.example"}}},
			[]string{"/childClusters/allowedServers/0"}},
		{"allowed server as a URL", map[string]any{"childClusters": map[string]any{"allowedServers": []any{"https://a.example"}}},
			[]string{"/childClusters/allowedServers/0"}},
		{"unknown log level", map[string]any{"log": map[string]any{"level": "verbose"}}, []string{"/log/level", "debug"}},
		{"unknown log encoding", map[string]any{"log": map[string]any{"encoding": "xml"}}, []string{"/log/encoding"}},
		{"port out of range", map[string]any{"metrics": map[string]any{"port": 70000}}, []string{"/metrics/port", "maximum"}},
		{"no shards", map[string]any{"sharding": map[string]any{"shards": 0}}, []string{"/sharding/shards", "minimum"}},
		{"shards as a string", map[string]any{"sharding": map[string]any{"shards": "2"}}, []string{"/sharding/shards", "integer"}},
		{"leader election off with shards", map[string]any{"sharding": map[string]any{"shards": 2}, "leaderElection": map[string]any{"enabled": false}},
			[]string{"/leaderElection/enabled"}},
		{"unknown pull policy", map[string]any{"image": map[string]any{"pullPolicy": "Sometimes"}}, []string{"/image/pullPolicy"}},
		{"relative bundle dir", map[string]any{"bundles": map[string]any{"dir": "bundles"}}, []string{"/bundles/dir"}},
		{"extra arg without dashes", map[string]any{"extraArgs": []any{"leader-elect=false"}}, []string{"/extraArgs/0"}},
		{"writable root filesystem", map[string]any{"securityContext": map[string]any{"readOnlyRootFilesystem": false}}, []string{"/securityContext/readOnlyRootFilesystem"}},
		{"privilege escalation", map[string]any{"securityContext": map[string]any{"allowPrivilegeEscalation": true}}, []string{"/securityContext/allowPrivilegeEscalation"}},
		{"root pod", map[string]any{"podSecurityContext": map[string]any{"runAsNonRoot": false}}, []string{"/podSecurityContext/runAsNonRoot"}},
		{"bad gateway name", map[string]any{"workspaceAccess": map[string]any{"gateway": map[string]any{"name": "Not A Name"}}}, []string{"/workspaceAccess/gateway/name"}},
		{"unknown mesh mode", map[string]any{"workspaceAccess": map[string]any{"mesh": map[string]any{"mode": "ambiant"}}}, []string{"/workspaceAccess/mesh/mode"}},
		{"waypoints as a string", map[string]any{"workspaceAccess": map[string]any{"mesh": map[string]any{"waypoints": map[string]any{"enabled": "yes"}}}},
			[]string{"/workspaceAccess/mesh/waypoints/enabled", "boolean"}},
		{"bad waypoint namespace", map[string]any{"workspaceAccess": map[string]any{"mesh": map[string]any{"waypoints": map[string]any{"namespace": "istio.system"}}}},
			[]string{"/workspaceAccess/mesh/waypoints/namespace"}},
		{"unknown delivery mode", map[string]any{"delivery": map[string]any{"mode": "flux"}}, []string{"/delivery/mode"}},
		{"git mode without a repository", map[string]any{"delivery": map[string]any{"mode": "git"}}, []string{"/delivery/git"}},
		{"absolute routes folder", map[string]any{"delivery": map[string]any{"git": map[string]any{"routesPath": "/regions"}}}, []string{"/delivery/git/routesPath"}},
		{"bad git secret reference", map[string]any{"delivery": map[string]any{"git": map[string]any{"secretRef": "just-a-name"}}}, []string{"/delivery/git/secretRef"}},
		{"bad age recipient", map[string]any{"delivery": map[string]any{"git": map[string]any{"sops": map[string]any{"ageRecipients": []any{"ssh-rsa AAAA"}}}}}, []string{"/delivery/git/sops/ageRecipients/0"}},
		{"unknown service type", map[string]any{"metrics": map[string]any{"service": map[string]any{"type": "External"}}}, []string{"/metrics/service/type"}},
		{"unknown kube-state-metrics key", map[string]any{"kubeStateMetrics": map[string]any{"config": "x"}}, []string{"/kubeStateMetrics", "config"}},
		{"bad kube-state-metrics namespace", map[string]any{"kubeStateMetrics": map[string]any{"namespace": "Monitoring"}}, []string{"/kubeStateMetrics/namespace"}},
		{"RBAC without a ServiceAccount", map[string]any{"kubeStateMetrics": map[string]any{"enabled": true, "serviceAccount": map[string]any{"name": ""}}},
			[]string{"/kubeStateMetrics/serviceAccount/name"}},
		{"rule labels not strings", map[string]any{"prometheusRule": map[string]any{"labels": map[string]any{"release": 1}}}, []string{"/prometheusRule/labels/release"}},
		{"enabled as a string", map[string]any{"prometheusRule": map[string]any{"enabled": "yes"}}, []string{"/prometheusRule/enabled", "boolean"}},
		{"bad dashboard label", map[string]any{"grafanaDashboard": map[string]any{"label": "grafana dashboard"}}, []string{"/grafanaDashboard/label"}},
		{"bad dashboard label value", map[string]any{"grafanaDashboard": map[string]any{"labelValue": "a b"}}, []string{"/grafanaDashboard/labelValue"}},
	}
	ch := loadChart(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := render(ch, releaseName, releaseNamespace, tt.vals)
			g.Expect(err).To(HaveOccurred())
			t.Log(strings.TrimSpace(err.Error()))
			for _, w := range tt.want {
				g.Expect(err.Error()).To(ContainSubstring(w))
			}
		})
	}
}

// TestShardsRenderADeploymentEach: sharding.shards deploys one Deployment
// per shard, with selectors that do not overlap, the shard's flags and its
// own Lease, which the real binary accepts; one shard renders the single
// Deployment as before.
func TestShardsRenderADeploymentEach(t *testing.T) {
	g := NewWithT(t)
	ch := loadChart(t)
	objs, err := render(ch, releaseName, releaseNamespace, map[string]any{"replicaCount": 2, "sharding": map[string]any{"shards": 3}})
	g.Expect(err).NotTo(HaveOccurred())
	deps := find(objs, "Deployment")
	g.Expect(deps).To(HaveLen(3))
	for i, u := range deps {
		d := convert[appsv1.Deployment](g, u)
		shard := strconv.Itoa(i)
		g.Expect(d.Name).To(HaveSuffix("-shard-" + shard))
		g.Expect(d.Spec.Replicas).To(HaveValue(BeEquivalentTo(2)))
		g.Expect(d.Spec.Selector.MatchLabels).To(HaveKeyWithValue("apiary.exalsius.ai/shard", shard))
		g.Expect(d.Spec.Template.Labels).To(HaveKeyWithValue("apiary.exalsius.ai/shard", shard))
		args := d.Spec.Template.Spec.Containers[0].Args
		g.Expect(args).To(ContainElements("--leader-elect=true", "--leader-election-namespace="+releaseNamespace,
			"--shards=3", "--shard="+shard))
		g.Expect(args).NotTo(ContainElement(HavePrefix("--leader-election-id")), "each shard's Lease is apiary-shard-<index>")
		expectManagerAccepts(t, g, args)
	}
	// The metrics Service selects every shard's pods.
	for _, svc := range find(objs, "Service") {
		sel, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector")
		g.Expect(sel).NotTo(HaveKey("apiary.exalsius.ai/shard"))
	}

	objs, err = render(ch, releaseName, releaseNamespace, map[string]any{"sharding": map[string]any{"shards": 1}})
	g.Expect(err).NotTo(HaveOccurred())
	deps = find(objs, "Deployment")
	g.Expect(deps).To(HaveLen(1))
	d := convert[appsv1.Deployment](g, deps[0])
	g.Expect(d.Name).NotTo(ContainSubstring("shard"))
	g.Expect(d.Spec.Template.Spec.Containers[0].Args).NotTo(ContainElement(HavePrefix("--shard")))
}
