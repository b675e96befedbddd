package delivery

import (
	"strconv"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/apiaryhq/apiary/internal/delivery/canon"
)

const markLabel = "app.kubernetes.io/managed-by"

// deferringOwner is an owner of a test that consents to deferred adoption,
// with the managed-by label as its mark.
func deferringOwner(ns, name string) Owner {
	o := testOwner(ns, name)
	o.DeferAdoption = &DeferAdoption{MarkLabels: []string{markLabel}}
	return o
}

// operatorConfigMap creates, as the client-side writer "manager", a
// ConfigMap with the labels and data given and, unless ref is empty, a
// non-controller ownerReference to the object with that UID, as the
// exalsius operator writes a workspace's ServiceSet.
func operatorConfigMap(t *testing.T, ns, name string, ref types.UID, labels, data map[string]string) *unstructured.Unstructured {
	t.Helper()
	cm := configMap(ns, name, data)
	cm.SetLabels(labels)
	if ref != "" {
		cm.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "workspaces.exalsius.ai/v1", Kind: "WorkspaceDeployment", Name: "w", UID: ref}})
	}
	if err := env.Client.Create(t.Context(), cm, client.FieldOwner("manager")); err != nil {
		t.Fatal(err)
	}
	waitCached(t, cm)
	return cm
}

func adoptingSink() *Direct {
	return NewDirect(mgr.GetClient(), mgr.GetAPIReader(), DirectOptions{AdoptFrom: []string{"manager"}})
}

// controlledBy sets on a desired object a controller reference to owner,
// as the workspace controller renders it.
func controlledBy(obj *unstructured.Unstructured, owner Owner) {
	yes := true
	obj.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "workspaces.exalsius.ai/v1", Kind: "WorkspaceDeployment",
		Name: owner.Name, UID: owner.UID, Controller: &yes, BlockOwnerDeletion: &yes}})
}

// TestDirectApply_DefersAdoptingWhatHoldsTheRender: objects another writer
// created for an owner that defers adoption, which hold what the owner
// renders (a mark label they lack and the flags of their reference to the
// owner aside), are not written, not even read from the API server, and
// are listed in the inventory; they belong to the owner by their
// ownerReference, so pruning and deleting remove them.
func TestDirectApply_DefersAdoptingWhatHoldsTheRender(t *testing.T) {
	g := NewWithT(t)
	ctx, ns, _, _ := setup(t, "defer")
	owner := deferringOwner(ns, "ws")
	sink := adoptingSink()
	var before []*unstructured.Unstructured
	for _, name := range []string{"kept", "pruned"} {
		before = append(before, operatorConfigMap(t, ns, name, owner.UID, map[string]string{"keep": "a"}, map[string]string{"mode": "fast"}))
	}
	desired := func(names ...string) []*unstructured.Unstructured {
		var out []*unstructured.Unstructured
		for _, name := range names {
			cm := configMap(ns, name, map[string]string{"mode": "fast"})
			cm.SetLabels(map[string]string{"keep": "a", markLabel: "apiary"})
			controlledBy(cm, owner)
			out = append(out, cm)
		}
		return out
	}

	var res *Result
	var err error
	reqs := requests.during(func() { res, err = sink.Apply(ctx, owner, desired("kept", "pruned"), nil) })
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(reqs).To(BeEmpty(), "the cache decides: no read, no write")
	g.Expect(res.Changed).To(BeEmpty())
	g.Expect(ids(res)).To(Equal([]string{ns + "_kept__ConfigMap", ns + "_pruned__ConfigMap"}), "listed as delivered")
	for _, b := range before {
		got, err := live(t, b)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.GetResourceVersion()).To(Equal(b.GetResourceVersion()), "%s is not written", b.GetName())
		g.Expect(got.GetAnnotations()).NotTo(HaveKey(AnnotationAppliedDigest))
		g.Expect(managersOf(got)).To(Equal([]string{"manager/Update"}), "the writer keeps its fields until the first change")
	}
	reqs = requests.during(func() { res, err = sink.Apply(ctx, owner, desired("kept", "pruned"), res.Inventory) })
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(reqs).To(BeEmpty(), "steady state")

	reqs = requests.during(func() { res, err = sink.Apply(ctx, owner, desired("kept"), res.Inventory) })
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(writes(reqs)).To(HaveLen(1))
	g.Expect(res.Changed).To(Equal([]string{ns + "_pruned__ConfigMap"}), "pruned by its ownerReference")
	_, err = live(t, before[1])
	g.Expect(client.IgnoreNotFound(err)).NotTo(HaveOccurred())
	g.Expect(err).To(HaveOccurred(), "the pruned object is gone")

	done, err := sink.Delete(ctx, owner, res.Inventory)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(done).To(BeTrue())
	_, err = live(t, before[0])
	g.Expect(client.IgnoreNotFound(err)).NotTo(HaveOccurred())
	g.Expect(err).To(HaveOccurred(), "deleting the owner deletes it")
}

// TestDirectApply_AdoptsADeferrableObjectThatDiffers: an object that would
// be deferred but differs from the render, or carries a mark label with
// another value, is adopted at once with the one adopting Update.
func TestDirectApply_AdoptsADeferrableObjectThatDiffers(t *testing.T) {
	g := NewWithT(t)
	ctx, ns, _, _ := setup(t, "defer-differs")
	owner := deferringOwner(ns, "ws")
	sink := adoptingSink()
	for _, tc := range []struct {
		name   string
		labels map[string]string
		data   string
	}{
		{name: "values", labels: map[string]string{"keep": "a"}, data: "slow"},
		{name: "mark", labels: map[string]string{"keep": "a", markLabel: "someone-else"}, data: "fast"},
	} {
		before := operatorConfigMap(t, ns, tc.name, owner.UID, tc.labels, map[string]string{"mode": tc.data})
		want := configMap(ns, tc.name, map[string]string{"mode": "fast"})
		want.SetLabels(map[string]string{"keep": "a", markLabel: "apiary"})
		controlledBy(want, owner)
		var res *Result
		var err error
		reqs := requests.during(func() { res, err = sink.Apply(ctx, owner, []*unstructured.Unstructured{want}, nil) })
		g.Expect(err).NotTo(HaveOccurred(), tc.name)
		g.Expect(writes(reqs)).To(HaveLen(1), "%s: one write", tc.name)
		g.Expect(res.Changed).To(Equal([]string{ns + "_" + tc.name + "__ConfigMap"}), tc.name)
		got, err := live(t, want)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(rv(g, got)).To(Equal(rv(g, before)+1), "%s: one write", tc.name)
		g.Expect(got.Object["data"]).To(HaveKeyWithValue("mode", "fast"), tc.name)
		g.Expect(got.GetLabels()).To(SatisfyAll(HaveKeyWithValue(markLabel, "apiary"), HaveKeyWithValue(LabelOwnerName, "ws")), tc.name)
		g.Expect(got.GetAnnotations()).To(SatisfyAll(HaveKey(AnnotationAppliedDigest), HaveKeyWithValue(AnnotationAdopted, "manager")),
			"%s: the adopting Update", tc.name)
		g.Expect(managersOf(got)).To(ContainElement("apiary/Apply"), "%s: the writer's fields moved", tc.name)
		g.Expect(got.GetOwnerReferences()).To(ConsistOf(HaveField("UID", owner.UID)), "%s: one reference to the owner", tc.name)
		g.Expect(metav1.GetControllerOf(got)).NotTo(BeNil(), "%s: the rendered controller reference", tc.name)
	}
}

// TestDirectApply_DeferralNeverTakesAnotherOwnersObject: an object carrying
// another Apiary owner's labels is refused, however its ownerReferences
// read, and neither pruned nor deleted for the owner.
func TestDirectApply_DeferralNeverTakesAnotherOwnersObject(t *testing.T) {
	g := NewWithT(t)
	ctx, ns, _, _ := setup(t, "defer-other")
	owner := deferringOwner(ns, "ws")
	other := testOwner(ns, "other")
	before := operatorConfigMap(t, ns, "cm", owner.UID, other.OwnerLabels(), map[string]string{"mode": "fast"})
	want := configMap(ns, "cm", map[string]string{"mode": "fast"})
	sink := adoptingSink()
	var err error
	reqs := requests.during(func() { _, err = sink.Apply(ctx, owner, []*unstructured.Unstructured{want}, nil) })
	g.Expect(err).To(MatchError(ContainSubstring("held by Colony " + ns + "/other")))
	g.Expect(writes(reqs)).To(BeEmpty())

	var done bool
	reqs = requests.during(func() { done, err = sink.Delete(ctx, owner, canon.NewInventory([]*unstructured.Unstructured{want})) })
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(done).To(BeTrue())
	g.Expect(writes(reqs)).To(BeEmpty(), "not deleted")
	got, err := live(t, before)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.GetResourceVersion()).To(Equal(before.GetResourceVersion()))
}

// TestDirectApply_AdoptsAtOnceWithoutDeferral: an object that holds the
// render is still written at once, as before deferral, when it has no
// ownerReference to the owner, when the owner does not defer (a Colony), and
// (applied, not adopted) when adoption is off.
func TestDirectApply_AdoptsAtOnceWithoutDeferral(t *testing.T) {
	g := NewWithT(t)
	ctx, ns, _, _ := setup(t, "defer-not")
	for _, tc := range []struct {
		name        string
		ref, defers bool
		sink        *Direct
		adopted     bool
	}{
		{name: "no-reference", defers: true, sink: adoptingSink(), adopted: true},
		{name: "owner-does-not-defer", ref: true, sink: adoptingSink(), adopted: true},
		{name: "adoption-off", ref: true, defers: true, sink: newDirect()},
	} {
		owner := testOwner(ns, tc.name)
		if tc.defers {
			owner = deferringOwner(ns, tc.name)
		}
		var ref types.UID
		if tc.ref {
			ref = owner.UID
		}
		before := operatorConfigMap(t, ns, tc.name, ref, nil, map[string]string{"mode": "fast"})
		want := configMap(ns, tc.name, map[string]string{"mode": "fast"})
		var res *Result
		var err error
		reqs := requests.during(func() { res, err = tc.sink.Apply(ctx, owner, []*unstructured.Unstructured{want}, nil) })
		g.Expect(err).NotTo(HaveOccurred(), tc.name)
		g.Expect(writes(reqs)).To(HaveLen(1), "%s: written", tc.name)
		g.Expect(res.Changed).To(HaveLen(1), tc.name)
		got, err := live(t, want)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(rv(g, got)).To(Equal(rv(g, before)+1), tc.name)
		g.Expect(got.GetAnnotations()).To(HaveKey(AnnotationAppliedDigest), tc.name)
		if tc.adopted {
			g.Expect(got.GetAnnotations()).To(HaveKeyWithValue(AnnotationAdopted, "manager"), tc.name)
		} else {
			g.Expect(got.GetAnnotations()).NotTo(HaveKey(AnnotationAdopted), tc.name)
		}
	}
}

// TestOwnsLive: which live objects an owner may prune and delete.
func TestOwnsLive(t *testing.T) {
	g := NewWithT(t)
	owner := Owner{Kind: "WorkspaceDeployment", Namespace: "ns", Name: "w", UID: "uid-w"}
	obj := func(labels map[string]string, uids ...types.UID) *metav1.ObjectMeta {
		m := &metav1.ObjectMeta{Labels: labels}
		for _, u := range uids {
			m.OwnerReferences = append(m.OwnerReferences, metav1.OwnerReference{UID: u})
		}
		return m
	}
	other := Owner{Kind: "WorkspaceDeployment", Namespace: "ns", Name: "other"}.OwnerLabels()
	g.Expect(owner.ownsLive(obj(owner.OwnerLabels()))).To(BeTrue(), "its labels")
	g.Expect(owner.ownsLive(obj(map[string]string{"a": "b"}, "x", "uid-w"))).To(BeTrue(), "its UID, no Apiary labels")
	g.Expect(owner.ownsLive(obj(nil, "x"))).To(BeFalse(), "another UID")
	g.Expect(owner.ownsLive(obj(other, "uid-w"))).To(BeFalse(), "another owner's labels win over the reference")
	g.Expect(owner.ownsLive(obj(map[string]string{LabelOwnerKind: "WorkspaceDeployment"}, "uid-w"))).To(BeFalse(), "part of some owner's labels")
	g.Expect(Owner{Kind: "Colony", Name: "c"}.ownsLive(obj(nil, ""))).To(BeFalse(), "an owner without UID")
}

// rv is an object's resourceVersion as a number.
func rv(g Gomega, obj metav1.Object) int {
	n, err := strconv.Atoi(obj.GetResourceVersion())
	g.Expect(err).NotTo(HaveOccurred())
	return n
}
