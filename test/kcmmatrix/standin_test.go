package kcmmatrix

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	"github.com/apiaryhq/apiary/internal/k0rdentstatus"
	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/test/standin"
)

// checkStandIn runs the stand-in's ServiceSet part, reporting like kcm
// v1.12 on the v1.12 CRDs and like v1.9 on the others, on a copy of the
// workspace's ServiceSet with a second service, and removes that service:
// what the stand-in writes is kept by the real CRDs and reads back through
// Apiary's reader as the kcm it plays means it.
func checkStandIn(t *testing.T, env *testenv.Environment, r release, w written) {
	ctx, cancel := context.WithCancel(context.Background())
	g := NewWithT(t)
	ns := w.workspace.GetNamespace()
	cluster, _, _ := unstructured.NestedString(w.workspace.Object, "spec", "cluster")
	services, _, _ := unstructured.NestedSlice(w.workspace.Object, "spec", "services")
	g.Expect(services).To(HaveLen(1))
	template, _, _ := unstructured.NestedString(services[0].(map[string]any), "template")

	// The child cluster is the API server itself; the template installs nothing.
	kubeconfig, err := env.Kubeconfig()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.Client.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: standin.KubeconfigSecretName(cluster)},
		Data:       map[string][]byte{k0rdentv1beta1.KubeconfigSecretKey: kubeconfig},
	})).To(Succeed())
	g.Expect(standin.CreateWithStatus(ctx, env.Client,
		standin.NewServiceTemplate(ns, template, true, map[string]string{standin.AnnotationInstant: "true"}))).To(Succeed())

	plays := standin.KCM19
	if r.hash {
		plays = standin.KCM112
	}
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: env.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect((&standin.ServiceSets{ReportAs: plays, RetryInterval: time.Second}).SetupWithManager(mgr)).To(Succeed())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		g.Expect(<-done).To(Succeed())
	}()

	ss := w.workspace.DeepCopy()
	ss.SetName("standin-" + ss.GetName())
	extra := map[string]any{"name": "extra", "namespace": "ws-extra", "template": template}
	g.Expect(unstructured.SetNestedSlice(ss.Object, append(services, extra), "spec", "services")).To(Succeed())
	g.Expect(apply(ctx, env.Client, ss.DeepCopy())).To(Succeed())

	read := func(g Gomega) *k0rdentv1beta1.ServiceSet { return readServiceSet(g, env.Client, ss) }
	verdict := func(g Gomega, name string) k0rdentstatus.ReleaseOutcome {
		return k0rdentstatus.ReleaseVerdict(read(g), name, nil, time.Minute, time.Now()).Outcome
	}
	g.Eventually(func(g Gomega) {
		g.Expect(verdict(g, w.release)).To(Equal(k0rdentstatus.ReleaseDeployed))
		g.Expect(verdict(g, "extra")).To(Equal(k0rdentstatus.ReleaseDeployed))
	}, 30*time.Second).Should(Succeed())
	got := read(g)
	ready := meta.FindStatusCondition(got.Status.Conditions, k0rdentv1beta1.ServiceSetServicesInReadyStateCondition)
	if plays == standin.KCM112 {
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Message).To(Equal("2/2"))
		for _, st := range got.Status.Services {
			g.Expect(st.LastDeployedHash).NotTo(BeEmpty(), "the CRD kept lastDeployedHash")
		}
	} else {
		g.Expect(ready).To(BeNil())
	}

	// The second service leaves the spec.
	g.Expect(unstructured.SetNestedSlice(ss.Object, services, "spec", "services")).To(Succeed())
	g.Expect(apply(ctx, env.Client, ss.DeepCopy())).To(Succeed())
	want := k0rdentstatus.ReleasePending // no state: gone from the status
	if plays == standin.KCM112 {
		want = k0rdentstatus.ReleaseDeleted
	}
	g.Eventually(func(g Gomega) {
		got := read(g)
		g.Expect(got.Status.Services).To(HaveLen(map[bool]int{true: 2, false: 1}[plays == standin.KCM112]))
		g.Expect(verdict(g, "extra")).To(Equal(want))
		g.Expect(verdict(g, w.release)).To(Equal(k0rdentstatus.ReleaseDeployed))
	}, 30*time.Second).Should(Succeed())
	g.Expect(env.Client.Delete(ctx, ss)).To(Succeed())
	g.Eventually(func() error {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(ss), &k0rdentv1beta1.ServiceSet{})
	}, 30*time.Second).ShouldNot(Succeed(), "the stand-in releases the deleted ServiceSet")
}
