package gitops_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/prerequisite"
	"github.com/apiaryhq/apiary/test/standin"
	"github.com/apiaryhq/apiary/test/world/builder"
)

// TestPrerequisiteRemovedThroughGit: in Git mode a workspace's shared
// prerequisite is committed and applied by Flux; once the workspace is gone
// and the grace period has passed, Apiary removes the prerequisite's file
// from the repository and Flux prunes the ServiceSet.
func TestPrerequisiteRemovedThroughGit(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "gitops-prereq")
	k0rdentFixtures(t, ns)
	st := standin.NewHelmServiceTemplate(ns, "cert-manager-1-16", "cert-manager", "1.16.0",
		map[string]string{standin.AnnotationChart: standin.ChartPrerequisite})
	g.Expect(standin.CreateWithStatus(ctx, env.Client, st)).To(Succeed())
	c := colony(ns, "fleet", "gpu")
	g.Expect(env.Client.Create(ctx, c)).To(Succeed())
	eventuallyTrue(t, c, commonv1.ReadyCondition)

	class := builder.NewClass(ns, "needs cert-manager", builder.Named("certs-"+ns), builder.WithPrerequisite(ns, st.Name, ""))
	g.Expect(env.Client.Create(ctx, class)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), class) })
	w := builder.Workspace(ns, "certs", class.Name, "fleet-gpu")
	g.Expect(env.Client.Create(ctx, w)).To(Succeed())
	w = eventuallyTrue(t, w, commonv1.CommittedCondition, commonv1.SyncedCondition, commonv1.ReadyCondition)
	g.Expect(w.Status.Prerequisites).To(ConsistOf(HaveField("Phase", workspacesv1.PrerequisiteSatisfied)))

	ss := &k0rdentv1beta1.ServiceSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "wsprereq-fleet-gpu-cert-manager-1-16"}}
	file := objectFile(ns, "serviceset", ss.Name)
	g.Expect(headFile(t, file)).To(ContainSubstring("template: cert-manager-1-16"), "the prerequisite is committed")
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ss), ss)).To(Succeed(), "and applied by Flux")

	g.Expect(env.Client.Delete(ctx, w)).To(Succeed())
	eventuallyGone(t, w)
	g.Eventually(func(g Gomega) map[string]string {
		got := &k0rdentv1beta1.ServiceSet{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ss), got)).To(Succeed())
		return got.Annotations
	}).WithTimeout(timeout).Should(HaveKey(prerequisite.AnnotationUnusedSince), "the live object records when it became unused")
	eventuallyGone(t, ss)
	g.Expect(headFile(t, file)).To(BeEmpty(), "the prerequisite's file left the repository")
}
