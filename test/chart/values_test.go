package chart

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

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
			"--leader-election-namespace=" + releaseNamespace, "--metrics-bind-address=:8080", "--metrics-secure",
			"--health-probe-bind-address=:8081", "--colony-concurrency=4", "--workspaceclass-concurrency=2",
			"--workspacedeployment-concurrency=8", "--tenantquota-concurrency=2", "--gpu-queueing-policy=StrictFIFO", "--preemption-requeue=Eviction",
			"--no-cross-namespace-refs=true", "--zap-log-level=info", "--zap-encoder=json",
			"--workspace-gateway-name=istio-ingressgateway", "--workspace-gateway-namespace=istio-system",
			"--workspace-mesh-mode=ambient", "--workspace-waypoint-enabled=true", "--workspace-waypoint-namespace=istio-system",
			"--adopt-field-managers=manager", "--child-server-https-only=true"},
		notWant: []string{"--bundle-dir", "--gpu-inventory-interval", "--crd-check-interval", "--prerequisite-grace-period",
			"--child-server-allow", "--values-from-service-account"},
	}, {
		name: "every knob",
		vals: map[string]any{
			"replicaCount":         3,
			"image":                map[string]any{"repository": "registry.example/apiary", "tag": "v9.9.9"},
			"leaderElection":       map[string]any{"id": "my-lease"},
			"metrics":              map[string]any{"port": 9090, "service": map[string]any{"port": 9090}},
			"health":               map[string]any{"port": 9091},
			"concurrency":          map[string]any{"colony": 1, "workspaceClass": 3, "workspaceDeployment": 16, "tenantQuota": 5},
			"gpuAdmission":         map[string]any{"queueingPolicy": "BestEffortFIFO", "preemptionRequeue": "Creation"},
			"noCrossNamespaceRefs": false,
			"gpuInventoryInterval": "2m30s",
			"crdCheckInterval":     "5s",
			// Children's servers: names, a wildcard, networks.
			"childClusters": map[string]any{"httpsOnly": false,
				"allowedServers": []any{"api.example.com", "*.child.example", "10.0.0.0/8", "fd00::/8", "192.168.1.7"}},
			// Unused prerequisites are removed after a day.
			"prerequisiteGracePeriod": "24h",
			// valuesFrom objects are read as each namespace's "apiary-values".
			"valuesFrom": map[string]any{"serviceAccount": "apiary-values"},
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
			"--workspacedeployment-concurrency=16", "--tenantquota-concurrency=5", "--gpu-queueing-policy=BestEffortFIFO", "--preemption-requeue=Creation",
			"--no-cross-namespace-refs=false", "--gpu-inventory-interval=2m30s", "--crd-check-interval=5s", "--bundle-dir=/etc/apiary/bundles",
			"--prerequisite-grace-period=24h", "--values-from-service-account=apiary-values", "--adopt-field-managers=manager,exalsius-operator",
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
		{"leader election off with replicas", map[string]any{"replicaCount": 2, "leaderElection": map[string]any{"enabled": false}},
			[]string{"replicaCount > 1 requires leaderElection.enabled", "without leader election every replica reconciles at once"}},
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
			[]string{"sharding.shards > 1 requires leaderElection.enabled", "a Lease of its own"}},
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
