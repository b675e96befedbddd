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
		switch o.GetKind() {
		case "ClusterRole", "ClusterRoleBinding", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding":
		default:
			g.Expect(o.GetNamespace()).To(Equal(releaseNamespace), "%s %s", o.GetKind(), o.GetName())
		}
	}
	// The manager's ClusterRole, the reader of its metrics and the three
	// tenant ClusterRoles; the policy that guards Apiary's finalizers; the
	// Services of the metrics and of the queue positions.
	g.Expect(kinds).To(Equal(map[string]int{"ServiceAccount": 1, "ClusterRole": 5, "ClusterRoleBinding": 1,
		"Role": 1, "RoleBinding": 1, "Service": 2, "Deployment": 1,
		"ValidatingAdmissionPolicy": 1, "ValidatingAdmissionPolicyBinding": 1}))

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

// TestClusterRoleMatchesGeneratedRBAC is the drift check: the manager's
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
	got := managerRole(g, objs)
	g.Expect(got.Rules).To(Equal(want.Rules),
		"charts/apiary/files/role.yaml differs from config/rbac/role.yaml: run `make manifests`")

	bindings := find(objs, "ClusterRoleBinding")
	g.Expect(bindings).To(HaveLen(1))
	b := convert[rbacv1.ClusterRoleBinding](g, bindings[0])
	g.Expect(b.RoleRef.Name).To(Equal(got.Name))
	g.Expect(b.Subjects).To(ConsistOf(rbacv1.Subject{Kind: "ServiceAccount",
		Name: find(objs, "ServiceAccount")[0].GetName(), Namespace: releaseNamespace}))
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
		for _, r := range managerRole(g, objs).Rules {
			for _, grp := range r.APIGroups {
				if strings.HasSuffix(grp, ".toolkit.fluxcd.io") {
					out = append(out, r)
				}
			}
		}
		return out
	}
	// In every mode the manager may get a Kustomization: the Delete expiry
	// policy asks whether Flux's inventory lists a workspace (docs/lifecycle.md).
	getKustomizations := rbacv1.PolicyRule{APIGroups: []string{"kustomize.toolkit.fluxcd.io"}, Resources: []string{"kustomizations"}, Verbs: []string{"get"}}
	g.Expect(fluxRules(nil)).To(ConsistOf(getKustomizations))
	objs, err := render(ch, releaseName, releaseNamespace, map[string]any{"delivery": map[string]any{"tenantGit": true}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(managerRole(g, objs).Rules).To(ContainElement(
		rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"namespaces"}, Verbs: []string{"get", "list", "watch"}}))
	g.Expect(convert[appsv1.Deployment](g, find(objs, "Deployment")[0]).Spec.Template.Spec.Containers[0].Args).To(
		ContainElements("--delivery=direct", "--tenant-git=true"))
	rules := fluxRules(map[string]any{"delivery": map[string]any{"mode": "git", "git": map[string]any{"url": "ssh://git@example.com/fleet.git"}}})
	g.Expect(rules).To(ConsistOf(getKustomizations,
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
		"rbac": map[string]any{"create": false}, "tenantRBAC": map[string]any{"enabled": false},
		"serviceAccount": map[string]any{"create": false, "name": "existing"},
		"metrics":        map[string]any{"service": map[string]any{"enabled": false}},
		"queuePositions": map[string]any{"service": map[string]any{"enabled": false}},
	})
	g.Expect(err).NotTo(HaveOccurred())
	for _, kind := range []string{"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ServiceAccount", "Service", "ServiceMonitor"} {
		g.Expect(find(objs, kind)).To(BeEmpty(), kind)
	}
	d := convert[appsv1.Deployment](g, find(objs, "Deployment")[0])
	g.Expect(d.Spec.Template.Spec.ServiceAccountName).To(Equal("existing"))
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
