package standin

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
)

// quiet is how long a test watches for a Helm action that must not happen.
const quiet = 3 * time.Second

// patchServiceSet changes a ServiceSet as it is now.
func patchServiceSet(g Gomega, ss *k0rdentv1beta1.ServiceSet, change func(*k0rdentv1beta1.ServiceSet)) {
	got := getServiceSet(g, ss)
	patch := client.MergeFrom(got.DeepCopy())
	change(got)
	g.Expect(mgmt.Client.Patch(context.Background(), got, patch)).To(Succeed())
}

// touch changes nothing but an annotation: the stand-in reconciles again.
func touch(g Gomega, ss *k0rdentv1beta1.ServiceSet, value string) {
	patchServiceSet(g, ss, func(got *k0rdentv1beta1.ServiceSet) {
		if got.Annotations == nil {
			got.Annotations = map[string]string{}
		}
		got.Annotations["test.apiary.dev/touched"] = value
	})
}

// Like Sveltos, the stand-in upgrades a release only when its own inputs
// (template, values, valuesFrom content) change: neither a resync nor a
// change of another service of the ServiceSet upgrades it.
func TestServiceSetUpgradesOnlyWhenInputsChange(t *testing.T) {
	g := NewWithT(t)
	ctx, ns := fixture(t, g)
	cd := provisioned(t, g, ns, "hash")
	g.Expect(CreateWithStatus(ctx, mgmt.Client, NewServiceTemplate(ns, "ws", true, nil))).To(Succeed())
	extra := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "extra"},
		StringData: map[string]string{"values.yaml": "fromSecret: 1\n"},
	}
	g.Expect(mgmt.Client.Create(ctx, extra)).To(Succeed())
	target := child.NewNamespace(t, "hash")
	b := service("b", target, "ws", "")
	b.ValuesFrom = []k0rdentv1beta1.ValuesFrom{{Kind: "Secret", Name: "extra"}}
	ss := NewServiceSet(ns, "hash", "hash", service("a", target, "ws", `{"v":1}`), b)
	g.Expect(mgmt.Client.Create(ctx, ss)).To(Succeed())
	expectService(g, ss, "a", k0rdentv1beta1.ServiceStateDeployed, BeEmpty())
	expectService(g, ss, "b", k0rdentv1beta1.ServiceStateDeployed, BeEmpty())
	cluster := client.ObjectKeyFromObject(cd)
	upgrades := func(a, b int) {
		t.Helper()
		counted := func(g Gomega) {
			g.Expect(services.Upgrades(cluster, target, "a")).To(Equal(a), "upgrades of a")
			g.Expect(services.Upgrades(cluster, target, "b")).To(Equal(b), "upgrades of b")
		}
		g.Eventually(counted, timeout).Should(Succeed())
		g.Consistently(counted, quiet, 250*time.Millisecond).Should(Succeed())
	}

	// A resync of the ServiceSet, and of the valuesFrom Secret with the same content.
	touch(g, ss, "1")
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(extra), extra)).To(Succeed())
	extra.Labels = map[string]string{"touched": "yes"}
	g.Expect(mgmt.Client.Update(ctx, extra)).To(Succeed())
	upgrades(0, 0)

	// Another service joins (a new generation): a and b stay as they are.
	patchServiceSet(g, ss, func(got *k0rdentv1beta1.ServiceSet) {
		got.Spec.Services = append(got.Spec.Services, service("c", target, "ws", ""))
	})
	expectService(g, ss, "c", k0rdentv1beta1.ServiceStateDeployed, BeEmpty())
	upgrades(0, 0)

	// Each service is upgraded when its own values change.
	patchServiceSet(g, ss, func(got *k0rdentv1beta1.ServiceSet) { got.Spec.Services[0].Values = `{"v":2}` })
	g.Eventually(func(g Gomega) { g.Expect(releasedValues(g, target, "a")).To(HaveKeyWithValue("v", 2.0)) }, timeout).Should(Succeed())
	upgrades(1, 0)
	g.Expect(mgmt.Client.Get(ctx, client.ObjectKeyFromObject(extra), extra)).To(Succeed())
	extra.Data["values.yaml"] = []byte("fromSecret: 2\n")
	g.Expect(mgmt.Client.Update(ctx, extra)).To(Succeed())
	g.Eventually(func(g Gomega) { g.Expect(releasedValues(g, target, "b")).To(HaveKeyWithValue("fromSecret", 2.0)) }, timeout).Should(Succeed())
	upgrades(1, 1)
}
