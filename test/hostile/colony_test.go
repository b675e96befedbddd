package hostile_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
)

// entry is a Colony cluster of the stand-in's template and credential.
func entry(name string) infrav1.ColonyCluster {
	return infrav1.ColonyCluster{ClusterName: name, ClusterDeploymentSpec: &runtime.RawExtension{Raw: []byte(
		`{"template":"tpl","credential":"cred","config":{}}`)}}
}

func colony(t *testing.T, ns, name string, entries ...infrav1.ColonyCluster) *infrav1.Colony {
	t.Helper()
	c := &infrav1.Colony{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: infrav1.ColonySpec{ColonyClusters: entries}}
	create(t, c)
	return c
}

func getColony(g Gomega, c *infrav1.Colony) *infrav1.Colony {
	out := &infrav1.Colony{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(c), out)).To(Succeed())
	return out
}

// Test4BundleOutputIsConfined: a tenant's ConfigMap bundle renders, for
// its Colony entry, a ClusterRoleBinding and a Secret in kube-system. The
// entry fails with a reason naming what was refused; neither object
// exists; the Colony's other entry is delivered.
func Test4BundleOutputIsConfined(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := tenant(t, "bundle")
	create(t, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "escape"}, Data: map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: escape\nversion: 0.1.0\n",
		"templates__escape.yaml": `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: hostile-{{ .Input.colony.namespace }}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{kind: Group, name: tenants, apiGroup: rbac.authorization.k8s.io}]
---
apiVersion: v1
kind: Secret
metadata: {name: hostile-{{ .Input.colony.namespace }}, namespace: kube-system}
stringData: {planted: "yes"}
`,
	}})
	bad := entry("bad")
	bad.Bundle = &commonv1.BundleReference{ConfigMapRef: &corev1.LocalObjectReference{Name: "escape"}}
	c := colony(t, ns, "fleet", entry("good"), bad)

	g.Eventually(func(g Gomega) {
		got := getColony(g, c)
		var reasons []string
		for _, s := range got.Status.Clusters {
			if s.ClusterName == "bad" {
				reasons = append(reasons, s.Reason, s.Message)
			}
		}
		g.Expect(reasons).To(ContainElement(commonv1.RenderFailedReason), "%v", got.Status.Clusters)
		g.Expect(reasons).To(ContainElement(SatisfyAny(ContainSubstring("ClusterRoleBinding"), ContainSubstring("not allowed"))))
	}, timeout, 200*time.Millisecond).Should(Succeed())
	g.Eventually(func() error {
		return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fleet-good"}, &k0rdentv1beta1.ClusterDeployment{})
	}, timeout, 200*time.Millisecond).Should(Succeed(), "the other entry is delivered")
	g.Consistently(func() bool {
		crb := env.Client.Get(ctx, client.ObjectKey{Name: "hostile-" + ns}, &rbacv1.ClusterRoleBinding{}) == nil
		sec := env.Client.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "hostile-" + ns}, &corev1.Secret{}) == nil
		return crb || sec
	}, 3*time.Second, 300*time.Millisecond).Should(BeFalse(), "nothing outside the Colony's namespace and kinds is delivered")
}

// Test8StatusStaysWritable: a Colony of 150 entries that all fail to
// render (a bundle that does not exist, with a long name) gets a status,
// bounded: the Ready message names a few entries and how many more, and
// the whole status stays far from what the API server refuses.
func Test8StatusStaysWritable(t *testing.T) {
	g := NewWithT(t)
	ns := tenant(t, "status")
	var entries []infrav1.ColonyCluster
	for i := range 150 {
		e := entry(fmt.Sprintf("c%03d", i))
		e.Bundle = &commonv1.BundleReference{Name: fmt.Sprintf("no-such-bundle-%03d", i)}
		entries = append(entries, e)
	}
	c := colony(t, ns, "many", entries...)
	g.Eventually(func(g Gomega) {
		got := getColony(g, c)
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation), "the status was written")
		g.Expect(got.Status.Clusters).To(HaveLen(150))
		ready := readyMessage(got.Status.Conditions)
		g.Expect(ready).To(ContainSubstring("more"))
		g.Expect(len(ready)).To(BeNumerically("<=", 2048))
		data, err := json.Marshal(got.Status)
		g.Expect(err).NotTo(HaveOccurred())
		t.Logf("status of 150 failing entries: %d bytes, Ready message %d bytes", len(data), len(ready))
		g.Expect(len(data)).To(BeNumerically("<", 128<<10))
	}, timeout, 300*time.Millisecond).Should(Succeed())
}

func readyMessage(conds []metav1.Condition) string {
	for _, c := range conds {
		if c.Type == commonv1.ReadyCondition {
			return c.Message
		}
	}
	return ""
}
