package workspace_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/controllertest"
	"github.com/apiaryhq/apiary/internal/quota"
	"github.com/apiaryhq/apiary/test/standin"
)

// chargeOf reads what a TenantQuota counts of a workspace (its change in
// flight, else the workspace's record of its charge).
func chargeOf(g Gomega, name string, key client.ObjectKey) *quotav1alpha1.QuotaCharge {
	q := &quotav1alpha1.TenantQuota{}
	g.Expect(controllertest.Env.Client.Get(context.Background(), client.ObjectKey{Name: name}, q)).To(Succeed())
	w := controllertest.GetWorkspace(g, key)
	return quota.Counted(q, quota.RefOf(w), w.Status.QuotaCharges)
}

// TestWorkspaceClockDrivesAdmissionOrderAndChargeTimes runs the real
// controller on a fake clock set an hour in the past. Admissions and quota
// charges are stamped with it. Of two workspaces waiting for the one GPU,
// the one created later but started again (stopped, then started) on the
// fake clock queues at the fake time, before the other's creation: when the
// GPU frees, it runs, and the one created earlier keeps waiting.
//
// The names are unique (uniq): the child cluster, and its ws-<name>
// namespaces that never finish terminating in envtest, are the suite's.
func TestWorkspaceClockDrivesAdmissionOrderAndChargeTimes(t *testing.T) {
	g := NewWithT(t)
	ns := controllertest.Env.NewNamespace(t, "clock")
	controllertest.ReadyCluster(t, ns, "c1")
	controllertest.ServiceTemplate(t, ns, "tmpl", nil)
	controllertest.WorkspaceClass(t, "g-"+ns, ns, "tmpl", nil)
	model, q := gpuTenant(t, ns, "L40", 1, quotav1alpha1.QuotaLimits{GPUs: []quotav1alpha1.GPULimit{{Name: "all", ResourceName: "nvidia.com/gpu", Count: 8}}})

	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	fake := controllertest.UseFakeClock(t, t0)

	// The occupant is admitted and charged at the fake time.
	keyO := controllertest.CreateWorkspace(t, gpuWorkspace(ns, uniq(ns, "occupant"), "g-"+ns, "c1", model, 1))
	occupant := controllertest.EventuallyRunning(t, keyO)
	g.Expect(occupant.Status.Admission).NotTo(BeNil())
	g.Expect(occupant.Status.Admission.AdmittedAt.Time).To(BeTemporally("==", t0), "admitted on the fake clock")
	g.Eventually(func(g Gomega) {
		c := chargeOf(g, q.Name, keyO)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.GPUs).To(BeEquivalentTo(1))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())

	// Created first, b waits ahead of a by creation.
	keyB := controllertest.CreateWorkspace(t, gpuWorkspace(ns, uniq(ns, "b"), "g-"+ns, "c1", model, 1))
	controllertest.EventuallyPhase(t, keyB, workspacesv1.PhaseWaiting)
	time.Sleep(1100 * time.Millisecond) // a later creation timestamp
	keyA := controllertest.CreateWorkspace(t, gpuWorkspace(ns, uniq(ns, "a"), "g-"+ns, "c1", model, 1))
	controllertest.EventuallyPhase(t, keyA, workspacesv1.PhaseWaiting)

	// a stops and starts again at t1 on the fake clock: before b's creation.
	controllertest.SetStopped(t, keyA, true)
	controllertest.EventuallyStopped(t, keyA)
	t1 := t0.Add(time.Minute)
	fake.SetTime(t1)
	controllertest.SetStopped(t, keyA, false)
	waiting := controllertest.EventuallyPhase(t, keyA, workspacesv1.PhaseWaiting)
	g.Expect(waiting.Status.Lifecycle).NotTo(BeNil())
	g.Expect(waiting.Status.Lifecycle.QueuedAt).NotTo(BeNil())
	g.Expect(waiting.Status.Lifecycle.QueuedAt.Time).To(BeTemporally("==", t1), "queued on the fake clock")
	b := controllertest.GetWorkspace(g, keyB)
	g.Expect(waiting.Status.Lifecycle.QueuedAt.Time).To(BeTemporally("<", b.CreationTimestamp.Time),
		"on the fake clock a queued before b was created")

	// The GPU frees at t2: a, first in the queue by the fake clock, runs.
	t2 := t0.Add(2 * time.Minute)
	fake.SetTime(t2)
	controllertest.DeleteWorkspace(t, keyO)
	running := controllertest.EventuallyRunning(t, keyA)
	g.Expect(running.Status.Admission).NotTo(BeNil())
	g.Expect(running.Status.Admission.AdmittedAt.Time).To(BeTemporally("==", t2), "admitted on the fake clock")
	g.Eventually(func(g Gomega) {
		c := chargeOf(g, q.Name, keyA)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.GPUs).To(BeEquivalentTo(1))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
	g.Consistently(func(g Gomega) {
		g.Expect(controllertest.GetWorkspace(g, keyB).Status.Phase).To(Equal(workspacesv1.PhaseWaiting))
	}, 2*time.Second, 200*time.Millisecond).Should(Succeed(), "b, created first, waits behind a, queued first")
	g.Expect(chargeOf(g, q.Name, keyB)).To(BeNil(), "a waiting workspace holds no charge")
}

// gpuTenant makes ns a tenant of its own: labelled tenant=<ns>, a child
// node of gpus GPUs of the model <prefix>-<ns> (returned), and a
// TenantQuota named ns over the namespace with hard, deleted at the end.
func gpuTenant(t *testing.T, ns, prefix string, gpus int64, hard quotav1alpha1.QuotaLimits) (string, *quotav1alpha1.TenantQuota) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	nsObj := &corev1.Namespace{}
	g.Expect(controllertest.Env.Client.Get(ctx, client.ObjectKey{Name: ns}, nsObj)).To(Succeed())
	nsObj.Labels = map[string]string{"tenant": ns}
	g.Expect(controllertest.Env.Client.Update(ctx, nsObj)).To(Succeed())
	model := prefix + "-" + ns
	g.Expect(standin.AddGPUNode(ctx, controllertest.ChildClient, ns+"-"+strings.ToLower(prefix), map[string]string{"exalsius.ai/gpu-model": model},
		"nvidia.com/gpu", gpus)).To(Succeed())
	q := &quotav1alpha1.TenantQuota{ObjectMeta: metav1.ObjectMeta{Name: ns}, Spec: quotav1alpha1.TenantQuotaSpec{
		NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tenant": ns}}, Hard: hard}}
	g.Expect(controllertest.Env.Client.Create(ctx, q)).To(Succeed())
	t.Cleanup(func() { _ = controllertest.Env.Client.Delete(context.Background(), q) })
	return model, q
}
