package crash_test

import (
	"context"
	"sort"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/delivery"
	"github.com/apiaryhq/apiary/internal/naming"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
	"github.com/apiaryhq/apiary/test/standin"
)

// converged checks what a user sees once the fleet settled, and returns how
// many objects it checked: deleted workspaces are gone (their finalizer
// released, their ServiceSet and child namespace going), every other one
// is in its expected phase for its current generation with its values on
// the child, installed once; exactly one ServiceSet per workspace and one
// prerequisite ServiceSet per cluster that needs it, none else; the
// Colony's ClusterDeployments, each still the object first seen.
func (f *fleet) converged(g Gomega, inv *invariants, colony []string) int {
	ctx := context.Background()
	checked := 0
	list := &workspacesv1.WorkspaceDeploymentList{}
	g.Expect(f.c.List(ctx, list, client.InNamespace(f.ns))).To(Succeed())
	got := map[string]*workspacesv1.WorkspaceDeployment{}
	for i := range list.Items {
		got[list.Items[i].Name] = &list.Items[i]
	}
	byCluster := map[string][]*workspacesv1.WorkspaceDeployment{}
	waiting := map[string]bool{}
	for _, w := range f.workspaces {
		obj, ok := got[w.name]
		if w.deleted {
			g.Expect(ok).To(BeFalse(), "deleted workspace %s is still there (finalizers %v)", w.name, finalizers(obj))
			f.childNamespaceGone(g, w)
			checked++
			continue
		}
		g.Expect(ok).To(BeTrue(), "workspace %s is missing", w.name)
		ready := apimeta.FindStatusCondition(obj.Status.Conditions, commonv1.ReadyCondition)
		g.Expect(ready).NotTo(BeNil(), "workspace %s has no Ready condition", w.name)
		g.Expect(ready.ObservedGeneration).To(Equal(obj.Generation), "workspace %s: %s", w.name, obj.Status.Message)
		if w.gpus == 0 || obj.Status.Phase != workspacesv1.PhaseWaiting {
			g.Expect(obj.Status.Phase).To(Equal(workspacesv1.PhaseRunning), "workspace %s: %s", w.name, obj.Status.Message)
			f.releaseShows(g, w)
		}
		if w.gpus > 0 {
			byCluster[w.cluster] = append(byCluster[w.cluster], obj)
		}
		waiting[w.name] = obj.Status.Phase == workspacesv1.PhaseWaiting
		checked++
	}
	for cluster, objs := range byCluster {
		f.fifo(g, cluster, objs)
	}
	checked += f.serviceSetsMatch(g, waiting)
	checked += f.clustersMatch(g, inv, colony)
	return checked
}

func finalizers(obj *workspacesv1.WorkspaceDeployment) []string {
	if obj == nil {
		return nil
	}
	return obj.Finalizers
}

// childNamespaceGone checks that a deleted workspace's namespace on the
// child is gone or going (the child runs no namespace controller).
func (f *fleet) childNamespaceGone(g Gomega, w *workspace) {
	ns := &corev1.Namespace{}
	err := child.Client.Get(context.Background(), client.ObjectKey{Name: plan.ChildNamespace(w.name)}, ns)
	if err == nil {
		g.Expect(ns.DeletionTimestamp).NotTo(BeNil(), "child namespace of deleted workspace %s is kept", w.name)
		return
	}
	g.Expect(client.IgnoreNotFound(err)).To(Succeed())
}

// releaseShows checks that a running workspace's release holds its current
// values and was installed once (updates upgrade it in place).
func (f *fleet) releaseShows(g Gomega, w *workspace) {
	name, namespace := release(w)
	cm := &corev1.ConfigMap{}
	g.Expect(child.Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name + standin.ValuesConfigMapSuffix}, cm)).
		To(Succeed(), "values of workspace %s on the child", w.name)
	want := `"crash":"v1"`
	if w.updated {
		want = `"crash":"v2"`
	}
	g.Expect(cm.Data["values.json"]).To(ContainSubstring(want), "values of workspace %s", w.name)
	installs := sets.Installs(types.NamespacedName{Namespace: f.ns, Name: w.cluster}, namespace, name)
	g.Expect(installs).To(Equal(1), "Helm installs of workspace %s", w.name)
}

// fifo checks the GPU workspaces of a cluster: the admitted ones fit their
// nodes, and none waits while the oldest waiting one would fit (they all
// ask for one replica of the same selector, so StrictFIFO makes every
// younger one wait behind it).
func (f *fleet) fifo(g Gomega, cluster string, objs []*workspacesv1.WorkspaceDeployment) {
	free := map[string]int64{}
	for node, n := range f.capacity {
		free[node] = n
	}
	var waiting []*workspacesv1.WorkspaceDeployment
	for _, obj := range objs {
		if obj.Status.Phase == workspacesv1.PhaseWaiting {
			waiting = append(waiting, obj)
			continue
		}
		a := obj.Status.Admission
		g.Expect(a).NotTo(BeNil(), "running GPU workspace %s has no admission", obj.Name)
		for _, p := range a.Placement {
			free[p.Node] -= int64(p.Replicas) * a.GPUsPerReplica
		}
	}
	for node, n := range free {
		g.Expect(n).To(BeNumerically(">=", 0), "node %s of cluster %s is over-admitted", node, cluster)
	}
	if len(waiting) == 0 {
		return
	}
	sort.Slice(waiting, func(i, j int) bool {
		a, b := waiting[i].CreationTimestamp, waiting[j].CreationTimestamp
		if !a.Equal(&b) {
			return a.Before(&b)
		}
		return waiting[i].UID < waiting[j].UID
	})
	oldest := waiting[0]
	need := int64(*oldest.Spec.Resources.PerReplica.GPUCount)
	for node, n := range free {
		g.Expect(n).To(BeNumerically("<", need), "workspace %s waits for %d GPUs while node %s of cluster %s has %d free: %s",
			oldest.Name, need, node, cluster, n, oldest.Status.Message)
	}
}

// serviceSetsMatch checks the namespace's ServiceSets: one per live
// workspace admitted (none for one that waits for GPUs), one prerequisite per cluster that ever had a prerequisite
// workspace (prerequisites stay: no grace period), and nothing else.
func (f *fleet) serviceSetsMatch(g Gomega, waiting map[string]bool) int {
	list := &k0rdentv1beta1.ServiceSetList{}
	g.Expect(f.c.List(context.Background(), list, client.InNamespace(f.ns))).To(Succeed())
	perOwner := map[string]int{}
	var prereqs, others []string
	for _, ss := range list.Items {
		switch {
		case ss.Labels[plan.RoleLabel] == plan.RolePrerequisite:
			prereqs = append(prereqs, ss.Name)
		case ss.Labels[delivery.LabelOwnerKind] == "WorkspaceDeployment":
			perOwner[ss.Labels[delivery.LabelOwnerName]]++
			g.Expect(ss.Name).To(HavePrefix("wsd-"))
		default:
			others = append(others, ss.Name)
		}
	}
	g.Expect(others).To(BeEmpty(), "ServiceSets of nobody")
	want := map[string]int{}
	needPrereq := map[string]bool{}
	for _, w := range f.workspaces {
		if !w.deleted && !waiting[w.name] {
			want[naming.LabelValue(w.name)] = 1
		}
		if w.prereq {
			needPrereq[w.cluster] = needPrereq[w.cluster] || !w.deleted
		}
	}
	g.Expect(perOwner).To(Equal(want), "ServiceSets per workspace")
	var wantPrereqs []string
	allowed := map[string]bool{}
	for cluster, live := range needPrereq {
		name := plan.PrerequisiteServiceSetName(cluster, prereqTemplate)
		allowed[name] = true
		if live {
			wantPrereqs = append(wantPrereqs, name)
		}
	}
	for _, name := range prereqs {
		g.Expect(allowed).To(HaveKey(name), "prerequisite ServiceSet of a cluster that never needed one")
	}
	sort.Strings(prereqs)
	g.Expect(prereqs).To(ContainElements(wantPrereqs), "prerequisite ServiceSets")
	g.Expect(prereqs).To(HaveLen(len(dedupe(prereqs))))
	return len(list.Items)
}

// clustersMatch checks that the namespace holds exactly the Colony's
// ClusterDeployments, each the object first seen, and that the Colony is
// Ready with all of them.
func (f *fleet) clustersMatch(g Gomega, inv *invariants, colony []string) int {
	ctx := context.Background()
	list := &k0rdentv1beta1.ClusterDeploymentList{}
	g.Expect(f.c.List(ctx, list, client.InNamespace(f.ns))).To(Succeed())
	var got, want []string
	for _, cd := range list.Items {
		got = append(got, cd.Name)
		g.Expect(cd.UID).To(Equal(inv.UID("ClusterDeployment", cd.Name)), "ClusterDeployment %s was replaced", cd.Name)
		g.Expect(inv.Deleted("ClusterDeployment", cd.Name)).To(BeFalse(), "ClusterDeployment %s was deleted once", cd.Name)
	}
	for _, c := range colony {
		want = append(want, f.cd(c))
	}
	sort.Strings(got)
	sort.Strings(want)
	g.Expect(got).To(Equal(want), "ClusterDeployments")
	col := &infrav1.Colony{}
	g.Expect(f.c.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: colonyName}, col)).To(Succeed())
	g.Expect(col.Status.ObservedGeneration).To(Equal(col.Generation))
	g.Expect(col.Status.Phase).To(Equal(infrav1.ColonyPhaseReady))
	g.Expect(col.Status.ReadyClusters).To(BeEquivalentTo(len(colony)))
	return len(list.Items) + 1
}

func dedupe(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
