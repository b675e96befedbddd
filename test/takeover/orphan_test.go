package takeover_test

import (
	"bytes"
	"context"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/uninstall"
	"github.com/apiaryhq/apiary/test/world"
	"github.com/apiaryhq/apiary/test/world/builder"
)

// TestUninstallOrphanKeepsTheClusters: Apiary sets itself as the
// controller owner of the ClusterDeployments and kubeconfig Secret of a
// Colony and of a workspace's ServiceSet, so Kubernetes' garbage collector
// deletes them once Apiary's CRDs (and with them every Colony and
// WorkspaceDeployment) are deleted. `apiary uninstall --orphan` removes
// those references, and only those, and the finalizers no controller
// releases once Apiary is gone: the Colony and the workspace then delete at
// once, and what they owned stays, owned by nothing of Apiary's.
func TestUninstallOrphanKeepsTheClusters(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "orphan")
	builder.ReadyCluster(t, env.Client, ns, "c1")
	spec := mustJSON(t, map[string]any{"template": "tpl", "credential": "cred", "config": map[string]any{"region": "eu"}})
	col := &infrav1.Colony{ObjectMeta: metav1.ObjectMeta{Name: "col", Namespace: ns}, Spec: infrav1.ColonySpec{
		ColonyClusters: []infrav1.ColonyCluster{{ClusterName: "a", ClusterDeploymentSpec: &runtime.RawExtension{Raw: spec}}}}}
	g.Expect(env.Client.Create(ctx, col)).To(Succeed())
	class := builder.NewClass(ns, "orphan", builder.Named("orphan-"+ns))
	g.Expect(env.Client.Create(ctx, class)).To(Succeed())
	w := &workspacesv1.WorkspaceDeployment{ObjectMeta: metav1.ObjectMeta{Name: unique(ns, "orph"), Namespace: ns},
		Spec: workspacesv1.WorkspaceDeploymentSpec{WorkspaceClassRef: class.Name,
			ClusterDeploymentRef: workspacesv1.ClusterDeploymentReference{Name: "c1", Namespace: ns}}}
	g.Expect(env.Client.Create(ctx, w)).To(Succeed())

	m := apiary(t)
	world.EventuallyPhase(t, env.Client, w, workspacesv1.PhaseRunning)
	g.Eventually(func(g Gomega) {
		g.Expect(ownedByApiary(g, ns)).To(ContainElements(
			"ClusterDeployment "+ns+"/col-a", "Secret "+ns+"/col-kubeconfigs", "ServiceSet "+ns+"/wsd-c1-"+w.Name))
	}, timeout, poll).Should(Succeed())
	m.Stop()
	owned := ownedByApiary(g, ns)
	// An ownerReference to something else than Apiary's kinds stays.
	other := metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "keeper", UID: types.UID("keeper-uid")}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "shared", Namespace: ns, OwnerReferences: []metav1.OwnerReference{
		other, {APIVersion: infrav1.GroupVersion.String(), Kind: "Colony", Name: col.Name, UID: col.UID}}}}
	g.Expect(env.Client.Create(ctx, cm)).To(Succeed())

	// A dry run counts and writes nothing.
	opts := uninstall.Options{Lease: types.NamespacedName{Namespace: ns, Name: "apiary.infra.exalsius.ai"}, Orphan: true}
	dry := opts
	dry.DryRun = true
	rep, err := uninstall.Run(ctx, env.Client, dry)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rep.OwnerReferences).To(BeNumerically(">=", len(owned)+1))
	g.Expect(ownedByApiary(g, ns)).To(ConsistOf(append(owned, "ConfigMap "+ns+"/shared")))

	// The command line names the flag.
	var out, errOut bytes.Buffer
	code := uninstall.Main([]string{"--kubeconfig", kubeconfigFile(t), "--leader-election-namespace", ns, "--orphan", "--dry-run"}, &out, &errOut)
	g.Expect(code).To(Equal(0), errOut.String())
	g.Expect(out.String()).To(SatisfyAll(ContainSubstring("ClusterDeployment "+ns+"/col-a: removing owner reference to Colony col"),
		ContainSubstring("would remove")))

	rep, err = uninstall.Run(ctx, env.Client, opts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rep.OwnerReferences).To(BeNumerically(">=", len(owned)+1))
	g.Expect(ownedByApiary(g, ns)).To(BeEmpty(), "no ownerReference to Apiary's kinds is left")
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm)).To(Succeed())
	g.Expect(cm.OwnerReferences).To(ConsistOf(other), "other owners are kept")
	again, err := uninstall.Run(ctx, env.Client, opts)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(uninstall.Report{}), "a second run has nothing left to do")

	// Without their finalizers the Colony and the workspace go at once; what
	// they owned stays.
	g.Expect(env.Client.Delete(ctx, w)).To(Succeed())
	g.Expect(env.Client.Delete(ctx, col)).To(Succeed())
	g.Eventually(func() bool {
		return apierrorsIsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(w), &workspacesv1.WorkspaceDeployment{})) &&
			apierrorsIsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(col), &infrav1.Colony{}))
	}, timeout, poll).Should(BeTrue(), "nothing holds them")
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "col-a"}, &k0rdentv1beta1.ClusterDeployment{})).To(Succeed())
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "wsd-c1-" + w.Name}, &k0rdentv1beta1.ServiceSet{})).To(Succeed())
}

// ownedByApiary names ("Kind ns/name") the objects in ns of the kinds
// Apiary creates that carry an ownerReference to one of Apiary's kinds.
func ownedByApiary(g Gomega, ns string) []string {
	var out []string
	for _, gvk := range []schema.GroupVersionKind{
		k0rdentv1beta1.GroupVersion.WithKind("ClusterDeployment"), k0rdentv1beta1.GroupVersion.WithKind("ServiceSet"),
		{Version: "v1", Kind: "Secret"}, {Version: "v1", Kind: "ConfigMap"},
	} {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		g.Expect(env.Client.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
		for _, o := range list.Items {
			if slices.ContainsFunc(o.OwnerReferences, func(r metav1.OwnerReference) bool {
				gv, _ := schema.ParseGroupVersion(r.APIVersion)
				return slices.Contains(uninstall.OwnerGroups, gv.Group)
			}) {
				out = append(out, gvk.Kind+" "+ns+"/"+o.Name)
			}
		}
	}
	return out
}
