package hostile_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/yamlbound/yamlboundtest"
	"github.com/apiaryhq/apiary/test/world"
)

// TestSecretValuesGiveTheChartWhatWasAdmitted (issue 30, item 1): a class
// injects the GPU count, replicas and CPU into its chart's values, and
// admits a workspace with 1 replica of 250m CPU and no GPU. The tenant
// sets those paths to 8 GPUs, 50 replicas and 64 CPUs in a valuesFrom
// Secret, and 8 GPUs again through a Secret's targetPath. The workspace
// runs with a warning naming the paths, and the chart (the stand-in's
// release on the child) receives what was admitted: 1 replica, 250m, no
// GPU.
func TestSecretValuesGiveTheChartWhatWasAdmitted(t *testing.T) {
	g := NewWithT(t)
	ns := tenant(t, "secretinj")
	mayRead(t, ns, "big", "gpus")
	secret(t, ns, "big", "app:\n  replicas: 50\n  resources:\n    limits:\n      nvidia.com/gpu: 8\n    requests:\n      cpu: \"64\"\n")
	secret(t, ns, "gpus", "8")
	cls := class(t, ns, func(c *workspacesv1.WorkspaceClass) {
		one, cpu := int32(1), resource.MustParse("250m")
		c.Spec.DefaultResources = workspacesv1.WorkspaceResourceSpec{Replicas: &one, PerReplica: &workspacesv1.PerReplicaResources{CPU: &cpu}}
		c.Spec.ResourceInjection = &workspacesv1.ResourceInjectionMap{
			Replicas: []workspacesv1.InjectionPath{"app.replicas"},
			CPU:      []workspacesv1.InjectionPath{"app.resources.requests.cpu"},
			GPUCount: []workspacesv1.InjectionPath{`app.resources.limits["nvidia.com/gpu"]`},
		}
	})
	w := workspace(ns, "secretinj", cls, "c1")
	w.Spec.ValuesFrom = []workspacesv1.ValuesReference{
		{Kind: "Secret", Name: "big"},
		{Kind: "Secret", Name: "gpus", TargetPath: `app.resources.limits.nvidia\.com/gpu`},
	}
	create(t, w)
	world.EventuallyPhase(t, env.Client, w, workspacesv1.PhaseRunning)
	g.Eventually(func(g Gomega) {
		app, _ := releaseValues(g, ns, w)["app"].(map[string]any)
		g.Expect(app).To(HaveKeyWithValue("replicas", BeNumerically("==", 1)), "the chart's values: %v", app)
		res, _ := app["resources"].(map[string]any)
		requests, _ := res["requests"].(map[string]any)
		g.Expect(requests).To(HaveKeyWithValue("cpu", "250m"))
		limits, _ := res["limits"].(map[string]any)
		g.Expect(limits).NotTo(HaveKey("nvidia.com/gpu"), "the chart must get no GPU: %v", limits)
	}, timeout, 200*time.Millisecond).Should(Succeed())
	got := &workspacesv1.WorkspaceDeployment{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(w), got)).To(Succeed())
	c := condition(got, workspacesv1.ResourcesInjectedCondition)
	g.Expect(c).NotTo(BeNil())
	g.Expect(c.Reason).To(Equal(workspacesv1.UserPathsOverwrittenReason))
	g.Expect(c.Message).To(ContainSubstring(`removed spec.values.app.resources.limits["nvidia.com/gpu"] (gpuCount)`))
	g.Expect(c.Message).To(ContainSubstring("overwrote spec.values.app.replicas (replicas)"))
	g.Expect(c.Message).To(ContainSubstring("overwrote spec.values.app.resources.requests.cpu (cpu)"))
	// The values Secret Apiary delivers carries no GPU either.
	vs := &corev1.Secret{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "wsd-c1-" + w.Name + "-values"}, vs)).To(Succeed())
	g.Expect(string(vs.Data["values.yaml"])).NotTo(ContainSubstring("nvidia.com/gpu"))
	g.Expect(string(vs.Data["values.yaml"])).NotTo(ContainSubstring("64"))
}

// TestValuesFromAliasBombFailsTheWorkspace (issue 30, item 2): 7 KiB of
// YAML anchors and aliases in a ConfigMap named by valuesFrom, which
// expand to 60 MB (sigs.k8s.io/yaml allocated 438 MiB decoding them
// once), fail the workspace with ValuesInvalid saying the bound, before
// anything is expanded; the manager's memory does not grow for it, and a
// workspace of another tenant still runs.
func TestValuesFromAliasBombFailsTheWorkspace(t *testing.T) {
	g := NewWithT(t)
	ns := tenant(t, "bomb")
	create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: valuesServiceAccount}})
	create(t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "values-cm"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}}})
	create(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "values-cm"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "values-cm"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: valuesServiceAccount}}})
	bomb := yamlboundtest.AliasBomb(2, 100, 6000)
	g.Expect(len(bomb)).To(BeNumerically("<", 8<<10))
	create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bomb"}, Data: map[string]string{"values.yaml": bomb}})
	cls := class(t, ns, nil)
	before := manager.PeakRSS()
	w := workspace(ns, "bomb", cls, "c1")
	w.Spec.ValuesFrom = []workspacesv1.ValuesReference{{Kind: "ConfigMap", Name: "bomb"}}
	create(t, w)
	g.Eventually(func(g Gomega) {
		got := get(g, w)
		g.Expect(got.Status.Phase).To(Equal(workspacesv1.PhaseFailed), "message: %s", got.Status.Message)
		c := condition(got, workspacesv1.ConfigResolvedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(workspacesv1.ValuesInvalidReason))
		g.Expect(c.Message).To(ContainSubstring("ConfigMap " + ns + "/bomb"))
		g.Expect(c.Message).To(ContainSubstring("expands to more than 4194304 bytes"))
		g.Expect(c.Message).NotTo(ContainSubstring("xxxx"), "the content is never quoted")
	}, timeout, 200*time.Millisecond).Should(Succeed())
	other := workspace(ns, "bomb-neighbour", cls, "c1")
	create(t, other)
	world.EventuallyPhase(t, env.Client, other, workspacesv1.PhaseRunning)
	after := manager.PeakRSS()
	t.Logf("the manager's peak resident set: %.1f MiB before the bomb, %.1f MiB after", float64(before)/(1<<20), float64(after)/(1<<20))
	g.Expect(manager.Exited()).To(BeNil(), "the manager survives")
	g.Expect(after-before).To(BeNumerically("<", 128<<20), "the bomb grew the manager's peak resident set")
}

// bundleWithValuesFrom is a workspace bundle that renders the workspace's
// ServiceSet with the values Apiary gives it, and adds a valuesFrom
// ConfigMap "gpus" of the cluster's namespace that Apiary never read.
const bundleWithValuesFrom = `apiVersion: k0rdent.mirantis.com/v1beta1
kind: ServiceSet
metadata:
  name: {{ .Input.serviceSetName | quote }}
  namespace: {{ .Input.cluster.namespace | quote }}
spec:
  cluster: {{ .Input.cluster.name | quote }}
  provider:
    name: ksm-projectsveltos
  services:
  - name: {{ .Input.releaseName | quote }}
    namespace: {{ .Input.releaseNamespace | quote }}
    template: {{ .Input.serviceTemplate | quote }}
    values: {{ .Input.values | quote }}
    valuesFrom:
    - kind: ConfigMap
      name: gpus
`

// TestDeliveredValuesAreCheckedAgainstTheAdmission (issue 30, item 1): the
// check right before delivery reads what reaches the chart from the
// objects as delivered, whoever rendered them. A class's ConfigMap bundle
// (bundles are treated as hostile) adds a valuesFrom ConfigMap that sets
// 8 GPUs at the class's injection path: the workspace, admitted without
// GPUs, fails with InjectedValueOverridden and nothing is delivered.
func TestDeliveredValuesAreCheckedAgainstTheAdmission(t *testing.T) {
	g := NewWithT(t)
	ns := tenant(t, "bundleinj")
	create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gpus"},
		Data: map[string]string{"values.yaml": "app:\n  resources:\n    limits:\n      nvidia.com/gpu: 8\n"}})
	create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bundle"}, Data: map[string]string{
		"Chart.yaml":                 "apiVersion: v2\nname: tampering\nversion: 0.1.0\n",
		"templates__serviceset.yaml": bundleWithValuesFrom,
	}})
	cls := class(t, ns, func(c *workspacesv1.WorkspaceClass) {
		c.Spec.Bundle = &commonv1.BundleReference{ConfigMapRef: &corev1.LocalObjectReference{Name: "bundle"}}
		c.Spec.ResourceInjection = &workspacesv1.ResourceInjectionMap{
			GPUCount: []workspacesv1.InjectionPath{`app.resources.limits["nvidia.com/gpu"]`},
		}
	})
	w := workspace(ns, "bundleinj", cls, "c1")
	create(t, w)
	g.Eventually(func(g Gomega) {
		got := get(g, w)
		g.Expect(got.Status.Phase).To(Equal(workspacesv1.PhaseFailed), "message: %s", got.Status.Message)
		g.Expect(got.Status.FailureContext).NotTo(BeNil())
		g.Expect(got.Status.FailureContext.Reason).To(Equal(workspacesv1.InjectedValueOverriddenReason))
		g.Expect(got.Status.Message).To(ContainSubstring("valuesFrom ConfigMap " + ns + "/gpus is not delivered with the workspace"))
	}, timeout, 200*time.Millisecond).Should(Succeed())
	list := &k0rdentv1beta1.ServiceSetList{}
	g.Expect(env.Client.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	g.Expect(list.Items).To(BeEmpty(), "nothing is delivered")
}
