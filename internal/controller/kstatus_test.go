package controller_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	"github.com/apiaryhq/apiary/test/standin"
)

// conditioned is a Colony or a TenantQuota.
type conditioned interface {
	client.Object
	GetConditions() []metav1.Condition
}

// wantConditionsKstatus is the kstatus a Colony or TenantQuota version
// must read as, and what the doc's healthCheckExprs must make of it.
func wantConditionsKstatus(obj conditioned) (kstatus, flux status.Status) {
	m, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	og, _, _ := unstructured.NestedInt64(m, "status", "observedGeneration")
	switch {
	case !obj.GetDeletionTimestamp().IsZero():
		return status.TerminatingStatus, status.InProgressStatus
	case og != obj.GetGeneration():
		return status.InProgressStatus, status.InProgressStatus
	case conditionStatus(obj, commonv1.StalledCondition) == metav1.ConditionTrue:
		return status.FailedStatus, status.FailedStatus
	case conditionStatus(obj, commonv1.ReadyCondition) == metav1.ConditionTrue:
		return status.CurrentStatus, status.CurrentStatus
	}
	return status.InProgressStatus, status.InProgressStatus
}

// watchConditionsKstatus checks every version of the objects of list's
// kind named by keep that the API server serves, with kstatus and with
// Flux's evaluator of the doc's healthCheckExprs, and records the verdicts.
func watchConditionsKstatus(t *testing.T, kind string, list client.ObjectList, opts []client.ListOption, keep func(client.Object) bool) *kstatusRecorder {
	t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(context.Background())
	watcher, err := wc.Watch(ctx, list, opts...)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	rec := &kstatusRecorder{seen: map[string]bool{}}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range watcher.ResultChan() {
			obj, ok := ev.Object.(conditioned)
			if !ok || ev.Type == watch.Error || !keep(obj) {
				continue
			}
			res, err := kstatusOf(obj)
			flux, fluxErr := fluxHealthOf(kind, obj)
			wantK, wantF := wantConditionsKstatus(obj)
			rec.mu.Lock()
			switch {
			case err != nil || fluxErr != nil:
				rec.errors = append(rec.errors, fmt.Sprintf("%s: %v %v", obj.GetName(), err, fluxErr))
			case res.Status != wantK || flux != wantF:
				rec.errors = append(rec.errors, fmt.Sprintf("%s %s generation %d: kstatus %s (%s), Flux %s; want %s and %s",
					kind, obj.GetName(), obj.GetGeneration(), res.Status, res.Message, flux, wantK, wantF))
			default:
				rec.seen[string(res.Status)] = true
				if obj.GetGeneration() > 1 && wantK == status.InProgressStatus {
					rec.seen["changed "+string(res.Status)] = true
				}
			}
			rec.mu.Unlock()
		}
	}()
	t.Cleanup(func() { cancel(); watcher.Stop(); <-done })
	return rec
}

// TestColonyKstatus: a Colony reads InProgress until its clusters are
// ready, Current once they are, InProgress again after a spec change,
// Failed while an entry's bundle cannot render, Terminating once deleted.
func TestColonyKstatus(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "colkstatus")
	rec := watchConditionsKstatus(t, "Colony", &infrav1.ColonyList{}, []client.ListOption{client.InNamespace(ns)},
		func(client.Object) bool { return true })
	k0rdentFixtures(t, ns)
	slow := entry("a")
	slow.ClusterAnnotations = map[string]string{standin.AnnotationDelay: "2s"}
	colony := createColony(t, ns, "fleet", slow)
	key := client.ObjectKeyFromObject(colony)
	c := eventuallyReady(t, key)
	updateSpec(g, c, func(c *infrav1.Colony) { c.Spec.ColonyClusters = append(c.Spec.ColonyClusters, entry("b")) })
	c = eventuallyReady(t, key)

	// A bundle that does not render stalls the Colony.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "broken-bundle", Namespace: ns}, Data: map[string]string{
		"Chart.yaml":         "apiVersion: v2\nname: broken\nversion: 0.1.0\n",
		"templates__cd.yaml": "kind: ClusterDeployment\nmetadata:\n  name: {{ nosuchfunction }}\n",
	}}
	g.Expect(env.Client.Create(ctx, cm)).To(Succeed())
	broken := entry("broken")
	broken.Bundle = &commonv1.BundleReference{ConfigMapRef: &corev1.LocalObjectReference{Name: cm.Name}}
	updateSpec(g, c, func(c *infrav1.Colony) { c.Spec.ColonyClusters = append(c.Spec.ColonyClusters, broken) })
	g.Eventually(func(g Gomega) {
		c = getColony(g, key)
		g.Expect(c.Status.ObservedGeneration).To(Equal(c.Generation))
		g.Expect(conditionStatus(c, commonv1.StalledCondition)).To(Equal(metav1.ConditionTrue))
	}, timeout, 200*time.Millisecond).Should(Succeed())

	g.Expect(env.Client.Delete(ctx, c)).To(Succeed())
	g.Eventually(func(g Gomega) {
		rec.check(g, string(status.InProgressStatus), string(status.CurrentStatus), "changed "+string(status.InProgressStatus),
			string(status.FailedStatus), string(status.TerminatingStatus))
	}, timeout, 200*time.Millisecond).Should(Succeed())
}

// TestTenantQuotaKstatus: a TenantQuota reads InProgress until Apiary
// enforces it, Current once it does, Failed with a selector that selects
// nothing, and Current again once fixed.
func TestTenantQuotaKstatus(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	name := "kstatus-" + rand.String(5)
	rec := watchConditionsKstatus(t, "TenantQuota", &quotav1alpha1.TenantQuotaList{}, nil,
		func(o client.Object) bool { return o.GetName() == name })
	q := &quotav1alpha1.TenantQuota{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: quotav1alpha1.TenantQuotaSpec{
		NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tenant": name}},
	}}
	g.Expect(env.Client.Create(ctx, q)).To(Succeed())
	t.Cleanup(func() { _ = client.IgnoreNotFound(env.Client.Delete(context.Background(), q)) })
	eventuallyQuota := func(want metav1.ConditionStatus, cond string) {
		g.Eventually(func(g Gomega) {
			got := &quotav1alpha1.TenantQuota{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(q), got)).To(Succeed())
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
			g.Expect(conditionStatus(got, cond)).To(Equal(want))
		}, timeout, 100*time.Millisecond).Should(Succeed())
	}
	eventuallyQuota(metav1.ConditionTrue, commonv1.ReadyCondition)
	updateSpec(g, q, func(q *quotav1alpha1.TenantQuota) {
		q.Spec.NamespaceSelector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "tenant", Operator: metav1.LabelSelectorOpIn}}}
	})
	eventuallyQuota(metav1.ConditionTrue, commonv1.StalledCondition)
	updateSpec(g, q, func(q *quotav1alpha1.TenantQuota) {
		q.Spec.NamespaceSelector = metav1.LabelSelector{MatchLabels: map[string]string{"tenant": name}}
	})
	eventuallyQuota(metav1.ConditionTrue, commonv1.ReadyCondition)
	g.Eventually(func(g Gomega) {
		rec.check(g, string(status.InProgressStatus), string(status.CurrentStatus), string(status.FailedStatus))
	}, timeout, 200*time.Millisecond).Should(Succeed())
}
