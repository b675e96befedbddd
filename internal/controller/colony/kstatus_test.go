package colony_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	"github.com/apiaryhq/apiary/internal/controller/controllertest"
	"github.com/apiaryhq/apiary/test/standin"
)

// TestColonyKstatus: a Colony reads InProgress until its clusters are
// ready, Current once they are, InProgress again after a spec change,
// Failed while an entry's bundle cannot render, Terminating once deleted.
func TestColonyKstatus(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := controllertest.Env.NewNamespace(t, "colkstatus")
	rec := controllertest.WatchConditionsKstatus(t, "Colony", &infrav1.ColonyList{}, []client.ListOption{client.InNamespace(ns)},
		func(client.Object) bool { return true })
	controllertest.K0rdentFixtures(t, ns)
	slow := controllertest.ColonyEntry("a")
	slow.ClusterAnnotations = map[string]string{standin.AnnotationDelay: "2s"}
	colony := createColony(t, ns, "fleet", slow)
	key := client.ObjectKeyFromObject(colony)
	c := eventuallyReady(t, key)
	controllertest.UpdateSpec(g, c, func(c *infrav1.Colony) {
		c.Spec.ColonyClusters = append(c.Spec.ColonyClusters, controllertest.ColonyEntry("b"))
	})
	c = eventuallyReady(t, key)

	// A bundle that does not render stalls the Colony.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "broken-bundle", Namespace: ns}, Data: map[string]string{
		"Chart.yaml":         "apiVersion: v2\nname: broken\nversion: 0.1.0\n",
		"templates__cd.yaml": "kind: ClusterDeployment\nmetadata:\n  name: {{ nosuchfunction }}\n",
	}}
	g.Expect(controllertest.Env.Client.Create(ctx, cm)).To(Succeed())
	broken := controllertest.ColonyEntry("broken")
	broken.Bundle = &commonv1.BundleReference{ConfigMapRef: &corev1.LocalObjectReference{Name: cm.Name}}
	controllertest.UpdateSpec(g, c, func(c *infrav1.Colony) { c.Spec.ColonyClusters = append(c.Spec.ColonyClusters, broken) })
	g.Eventually(func(g Gomega) {
		c = getColony(g, key)
		g.Expect(c.Status.ObservedGeneration).To(Equal(c.Generation))
		g.Expect(controllertest.ConditionStatus(c, commonv1.StalledCondition)).To(Equal(metav1.ConditionTrue))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())

	g.Expect(controllertest.Env.Client.Delete(ctx, c)).To(Succeed())
	g.Eventually(func(g Gomega) {
		rec.Check(g, string(status.InProgressStatus), string(status.CurrentStatus), "changed "+string(status.InProgressStatus),
			string(status.FailedStatus), string(status.TerminatingStatus))
	}, controllertest.Timeout, 200*time.Millisecond).Should(Succeed())
}
