package workspace

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/controller/index"
	"github.com/apiaryhq/apiary/internal/scheme"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
)

// TestWorkspacesOfServiceSet: a ServiceSet's events reach its workspace by
// Apiary's workspace labels and, for one the exalsius operator wrote that
// Apiary adopted without writing it (so without those labels), by the UID
// its ownerReference names.
func TestWorkspacesOfServiceSet(t *testing.T) {
	g := NewWithT(t)
	ws := func(ns, name string, uid types.UID) *workspacesv1.WorkspaceDeployment {
		return &workspacesv1.WorkspaceDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: uid},
			Spec: workspacesv1.WorkspaceDeploymentSpec{ClusterDeploymentRef: workspacesv1.ClusterDeploymentReference{Name: "c1", Namespace: "fleet"}}}
	}
	c := fake.NewClientBuilder().WithScheme(scheme.New()).
		WithIndex(&workspacesv1.WorkspaceDeployment{}, index.WorkspaceCluster, func(o client.Object) []string {
			return []string{plan.ClusterKey(o.(*workspacesv1.WorkspaceDeployment)).String()}
		}).
		WithObjects(ws("fleet", "a", "uid-a"), ws("fleet", "b", "uid-b"), ws("team", "c", "uid-c")).Build()
	r := &Reconciler{Client: c, stores: newStores()}
	ref := func(kind string, uid types.UID) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: workspacesv1.GroupVersion.String(), Kind: kind, Name: "x", UID: uid}
	}
	ss := func(labels map[string]string, refs ...metav1.OwnerReference) *k0rdentv1beta1.ServiceSet {
		return &k0rdentv1beta1.ServiceSet{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "wsd-c1-x", Labels: labels, OwnerReferences: refs},
			Spec: k0rdentv1beta1.ServiceSetSpec{Cluster: "c1"}}
	}
	req := func(ns, name string) reconcile.Request {
		return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
	}
	ctx := t.Context()
	g.Expect(r.workspacesOfServiceSet(ctx, ss(map[string]string{plan.WorkspaceLabel: "a", plan.WorkspaceOwnerNamespaceLabel: "fleet"}))).
		To(ConsistOf(req("fleet", "a")), "by Apiary's labels")
	g.Expect(r.workspacesOfServiceSet(ctx, ss(nil, ref("WorkspaceDeployment", "uid-b")))).
		To(ConsistOf(req("fleet", "b")), "the operator's ServiceSet, by its ownerReference")
	g.Expect(r.workspacesOfServiceSet(ctx, ss(nil, ref("WorkspaceDeployment", "uid-c")))).
		To(ConsistOf(req("team", "c")), "a reference to a workspace of another namespace, by UID")
	g.Expect(r.workspacesOfServiceSet(ctx, ss(nil, ref("WorkspaceDeployment", "uid-gone")))).To(BeEmpty(), "no such workspace")
	g.Expect(r.workspacesOfServiceSet(ctx, ss(nil, ref("Colony", "uid-a")))).To(BeEmpty(), "not a workspace's reference")
	g.Expect(r.workspacesOfServiceSet(ctx, ss(nil))).To(BeEmpty())

	// A prerequisite ServiceSet wakes the workspaces that wait for the
	// prerequisites of its cluster, whatever their cached status says.
	prereq := ss(map[string]string{"workspaces.exalsius.ai/role": "prerequisite"})
	g.Expect(r.workspacesOfServiceSet(ctx, prereq)).To(BeEmpty(), "nobody waits")
	r.waits.Settle(r.waits.Begin(), types.NamespacedName{Namespace: "fleet", Name: "a"},
		clusterTopic(waitPrerequisites, types.NamespacedName{Namespace: "fleet", Name: "c1"}))
	r.waits.Settle(r.waits.Begin(), types.NamespacedName{Namespace: "team", Name: "c"},
		clusterTopic(waitPrerequisites, types.NamespacedName{Namespace: "fleet", Name: "c2"}))
	g.Expect(r.workspacesOfServiceSet(ctx, prereq)).To(ConsistOf(req("fleet", "a")), "the waiter of c1's prerequisites")
	g.Expect(r.workspacesOfServiceSet(ctx, ss(nil))).To(ConsistOf(req("fleet", "a")),
		"a ServiceSet of no workspace may be an operator's prerequisite")
}
