package hostile_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/test/world"
)

// mayRead lets the namespace's valuesFrom ServiceAccount read the named
// Secrets, as a tenant's administrator grants it.
func mayRead(t *testing.T, ns string, secrets ...string) {
	t.Helper()
	create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: valuesServiceAccount}})
	create(t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "values"}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get"}, ResourceNames: secrets}}})
	create(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "values"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "values"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: valuesServiceAccount}}})
}

func secret(t *testing.T, ns, name, values string) {
	t.Helper()
	create(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: map[string]string{"values.yaml": values}})
}

// releaseValues reads the values the stand-in installed a workspace's
// release with, from the ConfigMap its chart writes on the child.
func releaseValues(g Gomega, ns string, w *workspacesv1.WorkspaceDeployment) map[string]any {
	cm := &corev1.ConfigMap{}
	release := "wsd-c1-" + w.Name
	g.Expect(child.Client.Get(context.Background(), client.ObjectKey{Namespace: "ws-" + w.Name, Name: release + "-values"}, cm)).To(Succeed())
	out := map[string]any{}
	g.Expect(json.Unmarshal([]byte(cm.Data["values.json"]), &out)).To(Succeed())
	return out
}

// Test1ReservedValuesAreRefused: on a class without GPUs, a tenant sets
// _exalsius.resources.perReplica.gpuCount: 8 inline, and a node selector
// through a valuesFrom Secret. Both workspaces fail with ReservedValues
// naming the path, and no ServiceSet is written for them.
func Test1ReservedValuesAreRefused(t *testing.T) {
	g := NewWithT(t)
	ns := tenant(t, "reserved")
	mayRead(t, ns, "selector")
	secret(t, ns, "selector", "_exalsius:\n  scheduling:\n    nodeSelector:\n      gpu: h100\n")
	cls := class(t, ns, nil)
	inline := workspace(ns, "reserved-inline", cls, "c1")
	inline.Spec.Values = jsonValues(t, map[string]any{"_exalsius": map[string]any{"resources": map[string]any{"perReplica": map[string]any{"gpuCount": 8}}}})
	fromSecret := workspace(ns, "reserved-from", cls, "c1")
	fromSecret.Spec.ValuesFrom = []workspacesv1.ValuesReference{{Kind: "Secret", Name: "selector"}}
	create(t, inline)
	create(t, fromSecret)
	for _, w := range []*workspacesv1.WorkspaceDeployment{inline, fromSecret} {
		g.Eventually(func(g Gomega) {
			got := get(g, w)
			g.Expect(got.Status.Phase).To(Equal(workspacesv1.PhaseFailed), "%s: %s", w.Name, got.Status.Message)
			c := condition(got, workspacesv1.ConfigResolvedCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Reason).To(Equal(workspacesv1.ReservedValuesReason))
			g.Expect(c.Message).To(ContainSubstring("_exalsius"))
			g.Expect(c.Message).NotTo(ContainSubstring("h100"), "the value is never quoted")
		}, timeout, 200*time.Millisecond).Should(Succeed())
	}
	list := &k0rdentv1beta1.ServiceSetList{}
	g.Expect(env.Client.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	for _, ss := range list.Items {
		g.Expect(ss.Name).NotTo(ContainSubstring("reserved"), "nothing is delivered for a refused workspace")
	}
}

// Test9ValuesFromReadsAsTheNamespace: with --values-from-service-account,
// a workspace reads only the Secrets its namespace's ServiceAccount may
// read: one naming a readable Secret runs, one naming the namespace's
// other Secret waits with ValuesFromForbidden and its content never
// reaches the child.
func Test9ValuesFromReadsAsTheNamespace(t *testing.T) {
	g := NewWithT(t)
	ns := tenant(t, "readas")
	mayRead(t, ns, "mine")
	secret(t, ns, "mine", "greeting: mine\n")
	secret(t, ns, "private", "password: s3cr3t-of-the-platform\n")
	cls := class(t, ns, nil)
	allowed := workspace(ns, "readas-mine", cls, "c1")
	allowed.Spec.ValuesFrom = []workspacesv1.ValuesReference{{Kind: "Secret", Name: "mine"}}
	refused := workspace(ns, "readas-private", cls, "c1")
	refused.Spec.ValuesFrom = []workspacesv1.ValuesReference{{Kind: "Secret", Name: "private"}}
	create(t, allowed)
	create(t, refused)
	world.EventuallyPhase(t, env.Client, allowed, workspacesv1.PhaseRunning)
	g.Eventually(func(g Gomega) {
		g.Expect(releaseValues(g, ns, allowed)).To(HaveKeyWithValue("greeting", "mine"))
	}, timeout, 200*time.Millisecond).Should(Succeed())
	g.Eventually(func(g Gomega) {
		got := get(g, refused)
		g.Expect(got.Status.Phase).To(Equal(workspacesv1.PhasePending), "message: %s", got.Status.Message)
		c := condition(got, workspacesv1.ConfigResolvedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(workspacesv1.ValuesFromForbiddenReason))
		g.Expect(c.Message).NotTo(ContainSubstring("s3cr3t"))
	}, timeout, 200*time.Millisecond).Should(Succeed())
	secrets := &corev1.SecretList{}
	g.Expect(env.Client.List(context.Background(), secrets, client.InNamespace(ns))).To(Succeed())
	for _, s := range secrets.Items {
		for _, v := range s.Data {
			if s.Name != "private" {
				g.Expect(string(v)).NotTo(ContainSubstring("s3cr3t"), "copied into %s", s.Name)
			}
		}
	}
}

// Test10ValuesArriveAsWritten: a tenant's value holding Go template syntax
// (which k0rdent's Sveltos adapter instantiates, the stand-in too) reaches
// the chart exactly as written, and cannot read the cluster's data.
func Test10ValuesArriveAsWritten(t *testing.T) {
	g := NewWithT(t)
	ns := tenant(t, "template")
	cls := class(t, ns, nil)
	written := `{{ .Cluster.metadata.name }} {{ env "HOME" }} }}{{`
	w := workspace(ns, "template-text", cls, "c1")
	w.Spec.Values = jsonValues(t, map[string]any{"motd": written})
	create(t, w)
	world.EventuallyPhase(t, env.Client, w, workspacesv1.PhaseRunning)
	g.Eventually(func(g Gomega) {
		g.Expect(releaseValues(g, ns, w)).To(HaveKeyWithValue("motd", written))
	}, timeout, 200*time.Millisecond).Should(Succeed())
	list := &k0rdentv1beta1.ServiceSetList{}
	g.Expect(env.Client.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	for _, ss := range list.Items {
		for _, svc := range ss.Spec.Services {
			g.Expect(strings.Contains(svc.Values, "{{")).To(BeFalse(), "no template delimiter reaches k0rdent: %s", svc.Values)
		}
	}
}

// jsonValues encodes Helm values for a workspace's spec.values.
func jsonValues(t *testing.T, v map[string]any) *apiextensionsv1.JSON {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return &apiextensionsv1.JSON{Raw: data}
}
