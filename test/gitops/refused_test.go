package gitops_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/test/world/builder"
)

// TestRefusedObjectsFailTheirOwnerOnlyThroughGit: owners that would have
// Git hold an object the API server refuses, which would fail the one Flux
// Kustomization of the folder for every tenant, are created together with
// a well-formed workspace. A workspace whose two valuesFrom Secrets make a
// values Secret over 1 MiB fails with a clear reason; a Colony entry whose
// verbatim ClusterDeployment spec has a field the schema does not declare
// is refused by the dry run and marked. Neither reaches the repository,
// Flux keeps applying, and the well-formed workspace runs.
func TestRefusedObjectsFailTheirOwnerOnlyThroughGit(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "gitops-refused")
	k0rdentFixtures(t, ns)
	fleet := colony(ns, "fleet", "gpu")
	g.Expect(env.Client.Create(ctx, fleet)).To(Succeed())
	eventuallyTrue(t, fleet, commonv1.ReadyCondition)

	class := builder.NewClass(ns, "notebook", builder.Named("refused-"+ns))
	g.Expect(env.Client.Create(ctx, class)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), class) })
	part := strings.Repeat("v", 600*1024) // each under 1 MiB, together over
	for _, name := range []string{"first", "second"} {
		g.Expect(env.Client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			StringData: map[string]string{"values.yaml": name + ": " + part}})).To(Succeed())
	}
	workspace := func(name string, valuesFrom ...string) *workspacesv1.WorkspaceDeployment {
		w := &workspacesv1.WorkspaceDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: workspacesv1.WorkspaceDeploymentSpec{
			WorkspaceClassRef:    class.Name,
			ClusterDeploymentRef: workspacesv1.ClusterDeploymentReference{Name: "fleet-gpu", Namespace: ns},
			Values:               &apiextensionsv1.JSON{Raw: []byte(`{"greeting":"hello"}`)},
		}}
		for _, s := range valuesFrom {
			w.Spec.ValuesFrom = append(w.Spec.ValuesFrom, workspacesv1.ValuesReference{Kind: "Secret", Name: s})
		}
		return w
	}
	huge, fine := workspace("huge", "first", "second"), workspace("fine")
	broken := &infrav1.Colony{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "broken"}, Spec: infrav1.ColonySpec{
		ColonyClusters: []infrav1.ColonyCluster{{ClusterName: "x", ClusterDeploymentSpec: &runtime.RawExtension{Raw: []byte(
			`{"template":"exalsius-remote-cluster-0-1-5","credential":"remote-cred","config":{},"notInTheSchema":true}`)}}},
	}}
	for _, o := range []client.Object{huge, broken, fine} {
		g.Expect(env.Client.Create(ctx, o)).To(Succeed())
	}

	fine = eventuallyTrue(t, fine, commonv1.CommittedCondition, commonv1.SyncedCondition, commonv1.ReadyCondition)
	g.Expect(fine.Status.Phase).To(Equal(workspacesv1.PhaseRunning))

	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(huge), huge)).To(Succeed())
		g.Expect(huge.Status.Phase).To(Equal(workspacesv1.PhaseFailed))
		g.Expect(huge.Status.Message).To(ContainSubstring("1048576"), "the message says the bound")
	}).WithTimeout(timeout).WithPolling(250 * time.Millisecond).Should(Succeed())
	t.Logf("the huge workspace: %s", huge.Status.Message)
	g.Expect(huge.Status.Message).NotTo(ContainSubstring("vvvv"), "no value in the status")

	broken = eventuallyReason(t, broken, commonv1.CommittedCondition, commonv1.ObjectRefusedReason)
	g.Expect(broken.Status.Clusters).To(HaveLen(1))
	entry := broken.Status.Clusters[0]
	t.Logf("the broken Colony's entry: %s: %s", entry.Reason, entry.Message)
	g.Expect(entry.Reason).To(Equal(commonv1.DeliveryFailedReason))
	g.Expect(entry.Message).To(And(ContainSubstring("ClusterDeployment "+ns+"/broken-x"), ContainSubstring("notInTheSchema")))
	g.Expect(broken.Status.Phase).To(Equal(infrav1.ColonyPhaseFailed))

	// Nothing of theirs reached the repository, and Flux applies it.
	g.Expect(headFile(t, objectFile(ns, "clusterdeployment", "broken-x"))).To(BeEmpty())
	g.Expect(strings.Join(headFiles(t), "\n")).NotTo(ContainSubstring("huge"))
	g.Eventually(func(g Gomega) {
		ks := &unstructured.Unstructured{}
		ks.SetAPIVersion("kustomize.toolkit.fluxcd.io/v1")
		ks.SetKind("Kustomization")
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: fluxNS, Name: fluxName}, ks)).To(Succeed())
		var conds []metav1.Condition
		raw, _, _ := unstructured.NestedSlice(ks.Object, "status", "conditions")
		for _, c := range raw {
			m, _ := c.(map[string]any)
			conds = append(conds, metav1.Condition{Type: str(m["type"]), Status: metav1.ConditionStatus(str(m["status"])), Message: str(m["message"])})
		}
		ready := apimeta.FindStatusCondition(conds, "Ready")
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "Flux: %s", ready.Message)
		g.Expect(fluxApplied(g)).To(HaveSuffix(history(t)[0].Hash.String()))
	}).WithTimeout(timeout).WithPolling(250 * time.Millisecond).Should(Succeed())
}

// headFiles lists the files of the branch head.
func headFiles(t *testing.T) []string {
	t.Helper()
	tree, err := history(t)[0].Tree()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	var out []string
	w := tree.Files()
	defer w.Close()
	for f, err := w.Next(); err == nil; f, err = w.Next() {
		out = append(out, f.Name)
	}
	return out
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
