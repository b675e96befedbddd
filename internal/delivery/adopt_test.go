package delivery

import (
	"context"
	"strconv"
	"testing"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// legacyConfigMap creates, as a client-side writer with field manager
// "manager" (the exalsius operator's), a ConfigMap with the labels and data
// given, and returns it as the API server has it.
func legacyConfigMap(t *testing.T, ns, name string, labels map[string]string, data map[string]string) *unstructured.Unstructured {
	t.Helper()
	cm := configMap(ns, name, data)
	cm.SetLabels(labels)
	if err := env.Client.Create(t.Context(), cm, client.FieldOwner("manager")); err != nil {
		t.Fatal(err)
	}
	waitCached(t, cm)
	return cm
}

// managersOf lists the field managers of an object as "manager/operation".
func managersOf(obj metav1.Object) []string {
	var out []string
	for _, e := range obj.GetManagedFields() {
		out = append(out, e.Manager+"/"+string(e.Operation))
	}
	return out
}

// TestDirectApply_AdoptsFieldsOfAClientSideWriter: applying an object that
// a client-side writer created makes the sink the owner of the fields it
// renders, removes the labels it drops (but not those of k0rdent's domain),
// and later removals propagate.
func TestDirectApply_AdoptsFieldsOfAClientSideWriter(t *testing.T) {
	g := NewWithT(t)
	ctx, ns, owner, _ := setup(t, "adopt")
	sink := NewDirect(mgr.GetClient(), mgr.GetAPIReader(), DirectOptions{AdoptFrom: []string{"manager"}})
	before := legacyConfigMap(t, ns, "cm", map[string]string{"keep": "a", "later": "b", "dropped": "c", "k0rdent.mirantis.com/component": "kcm"},
		map[string]string{"mode": "fast", "old": "x"})

	want := configMap(ns, "cm", map[string]string{"mode": "fast"})
	want.SetLabels(map[string]string{"keep": "a", "later": "b"})
	res, err := sink.Apply(ctx, owner, []*unstructured.Unstructured{want}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Changed).To(HaveLen(1))
	got, err := live(t, want)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.GetLabels()).To(SatisfyAll(HaveKey("keep"), HaveKey("later"), Not(HaveKey("dropped")),
		HaveKeyWithValue("k0rdent.mirantis.com/component", "kcm")), "the dropped label goes, k0rdent's stays")
	g.Expect(got.Object["data"]).To(HaveKeyWithValue("old", "x"), "data the sink does not render stays with its writer")
	g.Expect(managersOf(got)).To(ConsistOf("apiary/Apply", "apiary/Update", "manager/Update"),
		"adopting is one Update: the fields it changed are the sink's Update entry's until its next apply")
	rv := func(s string) int {
		n, err := strconv.Atoi(s)
		g.Expect(err).NotTo(HaveOccurred())
		return n
	}
	g.Expect(rv(got.GetResourceVersion())).To(Equal(rv(before.GetResourceVersion())+1), "one write")
	g.Expect(got.GetAnnotations()).To(HaveKeyWithValue(AnnotationAdopted, "manager"), "to be settled by the next change")

	waitCached(t, want)
	want.SetLabels(map[string]string{"keep": "a"})
	_, err = sink.Apply(ctx, owner, []*unstructured.Unstructured{want}, res.Inventory)
	g.Expect(err).NotTo(HaveOccurred())
	got, err = live(t, want)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.GetLabels()).NotTo(HaveKey("later"), "a label the writer set and the sink rendered, then dropped, goes")
	g.Expect(managersOf(got)).To(ConsistOf("apiary/Apply", "manager/Update"), "the next apply settles the adopting Update's fields")
	g.Expect(got.GetAnnotations()).NotTo(HaveKey(AnnotationAdopted))
	g.Expect(got.GetAnnotations()).To(HaveKey(AnnotationAppliedDigest))

	waitCached(t, want)
	want.SetAnnotations(map[string]string{"note": "n"})
	_, err = sink.Apply(ctx, owner, []*unstructured.Unstructured{want}, res.Inventory)
	g.Expect(err).NotTo(HaveOccurred())
	waitCached(t, want)
	want.SetAnnotations(nil)
	_, err = sink.Apply(ctx, owner, []*unstructured.Unstructured{want}, res.Inventory)
	g.Expect(err).NotTo(HaveOccurred())
	got, err = live(t, want)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.GetAnnotations()).NotTo(HaveKey("note"), "removals propagate after settling")
}

// TestDirectApply_WithoutAdoptionTheWritersLabelsStay is the control: a
// sink that takes nothing over leaves the client-side writer's labels, also
// those it stops rendering.
func TestDirectApply_WithoutAdoptionTheWritersLabelsStay(t *testing.T) {
	g := NewWithT(t)
	ctx, ns, owner, sink := setup(t, "noadopt")
	legacyConfigMap(t, ns, "cm", map[string]string{"keep": "a", "dropped": "c"}, map[string]string{"mode": "fast"})
	want := configMap(ns, "cm", map[string]string{"mode": "fast"})
	want.SetLabels(map[string]string{"keep": "a"})
	res, err := sink.Apply(ctx, owner, []*unstructured.Unstructured{want}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	waitCached(t, want)
	want.SetLabels(nil)
	_, err = sink.Apply(ctx, owner, []*unstructured.Unstructured{want}, res.Inventory)
	g.Expect(err).NotTo(HaveOccurred())
	got, err := live(t, want)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.GetLabels()).To(SatisfyAll(HaveKey("keep"), HaveKey("dropped")))
}

// TestDirectApply_AdoptsOnlyWhatItDidNotDeliver: objects the sink applied
// before (they carry its digest) are not taken over again, so a later
// client-side write under the same name keeps its fields.
func TestDirectApply_AdoptsOnlyWhatItDidNotDeliver(t *testing.T) {
	g := NewWithT(t)
	ctx, ns, owner, _ := setup(t, "adoptonce")
	sink := NewDirect(mgr.GetClient(), mgr.GetAPIReader(), DirectOptions{AdoptFrom: []string{"manager"}})
	want := configMap(ns, "cm", map[string]string{"mode": "fast"})
	res, err := sink.Apply(ctx, owner, []*unstructured.Unstructured{want}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	got, err := live(t, want)
	g.Expect(err).NotTo(HaveOccurred())
	got.SetLabels(map[string]string{"written-later": "yes"})
	g.Expect(env.Client.Update(ctx, got, client.FieldOwner("manager"))).To(Succeed())
	waitCached(t, want)

	want = configMap(ns, "cm", map[string]string{"mode": "slow"})
	_, err = sink.Apply(ctx, owner, []*unstructured.Unstructured{want}, res.Inventory)
	g.Expect(err).NotTo(HaveOccurred())
	got, err = live(t, want)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Object["data"]).To(HaveKeyWithValue("mode", "slow"))
	g.Expect(got.GetLabels()).To(HaveKeyWithValue("written-later", "yes"))
}

// racingReader is an uncached reader after whose first Get another writer
// changes the object, as a controller still running would.
type racingReader struct {
	client.Reader
	t    *testing.T
	done bool
}

func (r *racingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := r.Reader.Get(ctx, key, obj, opts...); err != nil || r.done {
		return err
	}
	r.done = true
	other := obj.DeepCopyObject().(client.Object)
	other.SetLabels(map[string]string{"written-between": "yes"})
	if err := env.Client.Update(ctx, other, client.FieldOwner("manager")); err != nil {
		r.t.Fatal(err)
	}
	return nil
}

// TestDirectApply_AdoptingFailsOnAConcurrentWrite: the adopting Update
// carries the resourceVersion it planned from, so a write in between makes
// it fail with a conflict instead of overwriting that write; the next
// Apply adopts the new object.
func TestDirectApply_AdoptingFailsOnAConcurrentWrite(t *testing.T) {
	g := NewWithT(t)
	ctx, ns, owner, _ := setup(t, "adoptrace")
	legacyConfigMap(t, ns, "cm", map[string]string{"keep": "a"}, map[string]string{"mode": "fast"})
	reader := &racingReader{Reader: mgr.GetAPIReader(), t: t}
	sink := NewDirect(mgr.GetClient(), reader, DirectOptions{AdoptFrom: []string{"manager"}})
	want := configMap(ns, "cm", map[string]string{"mode": "slow"})
	want.SetLabels(map[string]string{"keep": "a"})
	_, err := sink.Apply(ctx, owner, []*unstructured.Unstructured{want}, nil)
	g.Expect(apierrors.IsConflict(err)).To(BeTrue(), "a conflict: %v", err)
	got, err := live(t, want)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.GetLabels()).To(HaveKeyWithValue("written-between", "yes"), "the write in between is kept")
	g.Expect(got.Object["data"]).To(HaveKeyWithValue("mode", "fast"))

	waitCached(t, got)
	_, err = sink.Apply(ctx, owner, []*unstructured.Unstructured{want}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	got, err = live(t, want)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Object["data"]).To(HaveKeyWithValue("mode", "slow"))
	g.Expect(got.GetLabels()).To(SatisfyAll(HaveKeyWithValue("keep", "a"), Not(HaveKey("written-between"))),
		"adopted on the next Apply, the writer's label the render lacks removed")
}
