package controllertest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/test/standin"
)

// ReadyCluster creates a ClusterDeployment the stand-in makes ready, with its
// template and credential, and waits for it and its kubeconfig Secret.
func ReadyCluster(t *testing.T, ns, name string) {
	t.Helper()
	KOFCluster(t, ns, name, nil, nil)
}

// K0rdentFixturesOnce creates the K0rdentFixtures of ns unless they exist.
func K0rdentFixturesOnce(t *testing.T, ns string) {
	t.Helper()
	err := Env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "remote-cred"}, &k0rdentv1beta1.Credential{})
	if err == nil {
		return
	}
	K0rdentFixtures(t, ns)
}

// ServiceTemplate creates a valid ServiceTemplate with stand-in annotations.
func ServiceTemplate(t *testing.T, ns, name string, annotations map[string]string) {
	t.Helper()
	st := &k0rdentv1beta1.ServiceTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: annotations},
		Spec: k0rdentv1beta1.ServiceTemplateSpec{
			Version: "1.0.0",
			Helm: &k0rdentv1beta1.HelmSpec{ChartSpec: &apiextensionsv1.JSON{Raw: []byte(
				`{"chart":"workspace","version":"1.0.0","interval":"10m","sourceRef":{"kind":"HelmRepository","name":"charts"}}`)}},
		},
		Status: k0rdentv1beta1.ServiceTemplateStatus{TemplateStatusCommon: k0rdentv1beta1.TemplateStatusCommon{Valid: true}},
	}
	if err := standin.CreateWithStatus(context.Background(), Env.Client, st); err != nil {
		t.Fatalf("creating ServiceTemplate: %v", err)
	}
}

// WorkspaceClass creates a cluster-scoped class and removes it after the test.
func WorkspaceClass(t *testing.T, name, ns, template string, mutate func(*workspacesv1.WorkspaceClass)) *workspacesv1.WorkspaceClass {
	t.Helper()
	c := &workspacesv1.WorkspaceClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: workspacesv1.WorkspaceClassSpec{
		DisplayName:     name,
		ServiceTemplate: workspacesv1.ServiceTemplateRef{Name: template, Namespace: ns},
	}}
	if mutate != nil {
		mutate(c)
	}
	if err := Env.Client.Create(context.Background(), c); err != nil {
		t.Fatalf("creating WorkspaceClass: %v", err)
	}
	t.Cleanup(func() { _ = Env.Client.Delete(context.Background(), c) })
	return c
}

// NewWorkspace is a workspace of class on the ClusterDeployment cluster,
// both in ns; it is not created.
func NewWorkspace(ns, name, class, cluster string) *workspacesv1.WorkspaceDeployment {
	return &workspacesv1.WorkspaceDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: workspacesv1.WorkspaceDeploymentSpec{
			WorkspaceClassRef:    class,
			ClusterDeploymentRef: workspacesv1.ClusterDeploymentReference{Name: cluster, Namespace: ns},
		},
	}
}

// GetWorkspace reads a workspace, failing g if it cannot.
func GetWorkspace(g Gomega, key client.ObjectKey) *workspacesv1.WorkspaceDeployment {
	w := &workspacesv1.WorkspaceDeployment{}
	g.Expect(Env.Client.Get(context.Background(), key, w)).To(Succeed())
	return w
}

// EventuallyPhase waits for a workspace to reach a phase.
func EventuallyPhase(t *testing.T, key client.ObjectKey, phase workspacesv1.WorkspacePhase) *workspacesv1.WorkspaceDeployment {
	t.Helper()
	var w *workspacesv1.WorkspaceDeployment
	NewWithT(t).Eventually(func(g Gomega) {
		w = GetWorkspace(g, key)
		g.Expect(w.Status.Phase).To(Equal(phase), "message: %s", w.Status.Message)
	}, Timeout, 200*time.Millisecond).Should(Succeed())
	return w
}

// EventuallyRunning waits for a workspace to be Running and Ready.
func EventuallyRunning(t *testing.T, key client.ObjectKey) *workspacesv1.WorkspaceDeployment {
	t.Helper()
	w := EventuallyPhase(t, key, workspacesv1.PhaseRunning)
	NewWithT(t).Eventually(func(g Gomega) {
		w = GetWorkspace(g, key)
		ready := Condition(w, commonv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue))
	}, Timeout, 200*time.Millisecond).Should(Succeed())
	return w
}

// ServiceSetOf reads a workspace's ServiceSet.
func ServiceSetOf(g Gomega, w *workspacesv1.WorkspaceDeployment) *k0rdentv1beta1.ServiceSet {
	ss := &k0rdentv1beta1.ServiceSet{}
	g.Expect(Env.Client.Get(context.Background(), client.ObjectKey{Namespace: w.Spec.ClusterDeploymentRef.Namespace,
		Name: "wsd-" + w.Spec.ClusterDeploymentRef.Name + "-" + w.Name}, ss)).To(Succeed())
	return ss
}

// ReleaseValues reads the values the stand-in's chart recorded on the child.
func ReleaseValues(g Gomega, namespace, release string) map[string]any {
	cm := &corev1.ConfigMap{}
	g.Expect(ChildClient.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: release + "-values"}, cm)).To(Succeed())
	out := map[string]any{}
	g.Expect(json.Unmarshal([]byte(cm.Data["values.json"]), &out)).To(Succeed())
	return out
}

// ReadExample reads the YAML file at path, relative to the repository's
// root, into into.
func ReadExample(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), path))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, into); err != nil {
		t.Fatal(err)
	}
}
