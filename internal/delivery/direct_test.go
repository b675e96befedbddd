package delivery

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	"github.com/apiaryhq/apiary/internal/delivery/canon"
)

// deliverySet is a ConfigMap, a Secret written with stringData and a k0rdent
// ClusterDeployment (whose CRD defaults a field).
const deliverySet = `
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: NAMESPACE
  labels:
    app: demo
data:
  mode: fast
---
apiVersion: v1
kind: Secret
metadata:
  name: token
  namespace: NAMESPACE
stringData:
  token: not-a-real-token
---
apiVersion: k0rdent.mirantis.com/v1beta1
kind: ClusterDeployment
metadata:
  name: gpu-pool
  namespace: NAMESPACE
spec:
  template: aws-standalone-cp-1-0-12
  credential: aws-credential
  config:
    region: us-east-2
    workers: 2
    workersInstanceType: g5.xlarge
`

func TestDirectApply_FirstApplyCreatesObjectsAndReturnsInventory(t *testing.T) {
	g := NewWithT(t)
	ctx, ns, owner, sink := setup(t, "create")
	objs := mustDecode(t, ns, deliverySet)
	input := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		input[i] = o.DeepCopy()
	}

	res, err := sink.Apply(ctx, owner, objs, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs).To(Equal(input), "Apply does not modify its input")
	g.Expect(res.Revision).To(BeEmpty())
	want := []string{
		ns + "_gpu-pool_k0rdent.mirantis.com_ClusterDeployment",
		ns + "_settings__ConfigMap",
		ns + "_token__Secret",
	}
	g.Expect(ids(res)).To(Equal(want))
	g.Expect(res.Changed).To(Equal(want))
	g.Expect(res.Inventory).To(Equal(canon.NewInventory(objs)))
	for _, o := range objs {
		got, err := live(t, o)
		g.Expect(err).NotTo(HaveOccurred(), "%s", o.GetName())
		g.Expect(got.GetLabels()).To(HaveKeyWithValue(LabelOwnerKind, "Colony"))
		g.Expect(got.GetLabels()).To(HaveKeyWithValue(LabelOwnerNamespace, ns))
		g.Expect(got.GetLabels()).To(HaveKeyWithValue(LabelOwnerName, "colony-a"))
		digest, err := canon.Digest(o)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.GetAnnotations()).To(HaveKeyWithValue(AnnotationAppliedDigest, digest))
		g.Expect(got.GetManagedFields()).To(ContainElement(HaveField("Manager", DefaultFieldManager)))
	}
	cm, _ := live(t, objs[0])
	g.Expect(cm.GetLabels()).To(HaveKeyWithValue("app", "demo"))
}

func TestDirectApply_UnchangedSetMakesNoRequests(t *testing.T) {
	g := NewWithT(t)
	ctx, ns, owner, sink := setup(t, "steady")
	objs := mustDecode(t, ns, deliverySet)
	first, err := sink.Apply(ctx, owner, objs, nil)
	g.Expect(err).NotTo(HaveOccurred())
	waitCached(t, objs...)

	var second *Result
	reqs := requests.during(func() {
		second, err = sink.Apply(ctx, owner, mustDecode(t, ns, deliverySet), first.Inventory)
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(reqs).To(BeEmpty(), "a steady-state Apply reads from the cache and writes nothing")
	g.Expect(second.Changed).To(BeEmpty())
	g.Expect(second.Inventory).To(Equal(first.Inventory))
}

func TestDirectApply_OnlyTheChangedObjectIsApplied(t *testing.T) {
	g := NewWithT(t)
	ctx, ns, owner, sink := setup(t, "change")
	objs := []*unstructured.Unstructured{
		configMap(ns, "one", map[string]string{"k": "1"}),
		configMap(ns, "two", map[string]string{"k": "2"}),
		configMap(ns, "three", map[string]string{"k": "3", "old": "x"}),
	}
	first, err := sink.Apply(ctx, owner, objs, nil)
	g.Expect(err).NotTo(HaveOccurred())
	waitCached(t, objs...)

	objs[2] = configMap(ns, "three", map[string]string{"k": "33"})
	var res *Result
	reqs := requests.during(func() { res, err = sink.Apply(ctx, owner, objs, first.Inventory) })
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Changed).To(Equal([]string{ns + "_three__ConfigMap"}))
	g.Expect(writes(reqs)).To(HaveLen(1))
	got, err := live(t, objs[2])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Object["data"]).To(Equal(map[string]any{"k": "33"}), "a key dropped from the desired object is removed")
}

func TestDirectApply_PrunesObjectsThatLeftTheSet(t *testing.T) {
	g := NewWithT(t)
	ctx, ns, owner, sink := setup(t, "prune")
	keep := configMap(ns, "keep", map[string]string{"k": "v"})
	gone := configMap(ns, "gone", map[string]string{"k": "v"})
	first, err := sink.Apply(ctx, owner, []*unstructured.Unstructured{keep, gone}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	waitCached(t, keep, gone)

	// An object without a name makes the set unknowable: nothing is pruned.
	res, err := sink.Apply(ctx, owner, []*unstructured.Unstructured{keep, configMap(ns, "", nil)}, first.Inventory)
	g.Expect(err).To(MatchError(ContainSubstring("pruning of 1 objects skipped")))
	g.Expect(res.Inventory).To(Equal(first.Inventory))
	g.Expect(res.Changed).To(BeEmpty())

	res, err = sink.Apply(ctx, owner, []*unstructured.Unstructured{keep}, first.Inventory)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Changed).To(Equal([]string{ns + "_gone__ConfigMap"}))
	g.Expect(ids(res)).To(Equal([]string{ns + "_keep__ConfigMap"}))
	g.Eventually(func() bool {
		_, err := live(t, gone)
		return apierrors.IsNotFound(err)
	}).WithTimeout(10 * time.Second).Should(BeTrue())
	_, err = live(t, keep)
	g.Expect(err).NotTo(HaveOccurred())
}

func TestDirectApply_LeavesObjectsTakenOverByAnotherOwner(t *testing.T) {
	g := NewWithT(t)
	ctx, ns, owner, sink := setup(t, "takeover")
	cm := configMap(ns, "shared", map[string]string{"k": "v"})
	first, err := sink.Apply(ctx, owner, []*unstructured.Unstructured{cm}, nil)
	g.Expect(err).NotTo(HaveOccurred())

	other := testOwner(ns, "colony-b")
	got, err := live(t, cm)
	g.Expect(err).NotTo(HaveOccurred())
	labels := got.GetLabels()
	for k, v := range other.OwnerLabels() {
		labels[k] = v
	}
	got.SetLabels(labels)
	g.Expect(env.Client.Update(ctx, got)).To(Succeed())
	waitCached(t, cm)

	res, err := sink.Apply(ctx, owner, nil, first.Inventory)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Changed).To(BeEmpty())
	g.Expect(ids(res)).To(BeEmpty(), "the object is no longer this owner's")
	_, err = live(t, cm)
	g.Expect(err).NotTo(HaveOccurred(), "another owner's object must not be pruned")

	_, err = sink.Apply(ctx, owner, []*unstructured.Unstructured{cm}, res.Inventory)
	g.Expect(err).To(MatchError(ContainSubstring("ConfigMap " + ns + "/shared: held by Colony " + ns + "/colony-b")))
	g.Expect(IsHeldByOther(err)).To(BeTrue(), "a typed error the caller can name: %v", err)
}

func TestDirectApply_CorrectsDriftOfOwnFieldsOnly(t *testing.T) {
	g := NewWithT(t)
	ctx, ns, owner, sink := setup(t, "drift")
	objs := mustDecode(t, ns, deliverySet)
	first, err := sink.Apply(ctx, owner, objs, nil)
	g.Expect(err).NotTo(HaveOccurred())

	// Someone edits a field Apiary set.
	cd, err := live(t, objs[2])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(unstructured.SetNestedField(cd.Object, "other-credential", "spec", "credential")).To(Succeed())
	g.Expect(env.Client.Update(ctx, cd)).To(Succeed())
	waitCached(t, objs[2])

	res, err := sink.Apply(ctx, owner, objs, first.Inventory)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Changed).To(Equal([]string{ns + "_gpu-pool_k0rdent.mirantis.com_ClusterDeployment"}))
	cd, err = live(t, objs[2])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cd.Object["spec"]).To(HaveKeyWithValue("credential", "aws-credential"))

	// Someone adds a field Apiary does not set: not drift.
	cm, err := live(t, objs[0])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(unstructured.SetNestedField(cm.Object, "added", "data", "extra")).To(Succeed())
	g.Expect(env.Client.Update(ctx, cm)).To(Succeed())
	waitCached(t, objs...)

	reqs := requests.during(func() { res, err = sink.Apply(ctx, owner, objs, res.Inventory) })
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Changed).To(BeEmpty())
	g.Expect(writes(reqs)).To(BeEmpty())
	cm, err = live(t, objs[0])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cm.Object["data"]).To(HaveKeyWithValue("extra", "added"))
}

func TestDirectDelete_WaitsForFinalizers(t *testing.T) {
	g := NewWithT(t)
	ctx, ns, owner, sink := setup(t, "delete")
	held := configMap(ns, "held", map[string]string{"k": "v"})
	free := configMap(ns, "free", map[string]string{"k": "v"})
	res, err := sink.Apply(ctx, owner, []*unstructured.Unstructured{held, free}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	got, err := live(t, held)
	g.Expect(err).NotTo(HaveOccurred())
	got.SetFinalizers([]string{"example.com/hold"})
	g.Expect(env.Client.Update(ctx, got)).To(Succeed())
	waitCached(t, held, free)

	done, err := sink.Delete(ctx, owner, res.Inventory)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(done).To(BeFalse(), "a ConfigMap with a finalizer is still there")
	g.Eventually(func() bool {
		_, err := live(t, free)
		return apierrors.IsNotFound(err)
	}).WithTimeout(10 * time.Second).Should(BeTrue())
	got, err = live(t, held)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.GetDeletionTimestamp()).NotTo(BeNil())

	waitCached(t, held, free)
	reqs := requests.during(func() { done, err = sink.Delete(ctx, owner, res.Inventory) })
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(done).To(BeFalse())
	g.Expect(reqs).To(BeEmpty(), "waiting for a finalizer makes no request")

	got.SetFinalizers(nil)
	g.Expect(env.Client.Update(ctx, got)).To(Succeed())
	g.Eventually(func(g Gomega) {
		done, err := sink.Delete(ctx, owner, res.Inventory)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(done).To(BeTrue())
	}).WithTimeout(20 * time.Second).Should(Succeed())
}

func TestDirectApply_InvalidObjectIsNamedAndOthersApplied(t *testing.T) {
	g := NewWithT(t)
	ctx, ns, owner, sink := setup(t, "invalid")
	objs := mustDecode(t, ns, deliverySet)
	first, err := sink.Apply(ctx, owner, objs, nil)
	g.Expect(err).NotTo(HaveOccurred())
	waitCached(t, objs...)

	// The ClusterDeployment loses its template, which the CRD rejects; a new
	// ConfigMap joins the set.
	objs = mustDecode(t, ns, deliverySet)
	g.Expect(unstructured.SetNestedField(objs[2].Object, "", "spec", "template")).To(Succeed())
	extra := configMap(ns, "extra", map[string]string{"k": "v"})
	objs = append(objs, extra)
	res, err := sink.Apply(ctx, owner, objs, first.Inventory)
	g.Expect(err).To(MatchError(ContainSubstring("ClusterDeployment " + ns + "/gpu-pool: applying")))
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue())
	g.Expect(res).NotTo(BeNil())
	g.Expect(res.Changed).To(Equal([]string{ns + "_extra__ConfigMap"}))
	g.Expect(ids(res)).To(ConsistOf(append(ids(first), ns+"_extra__ConfigMap")),
		"the failed object stays in the inventory")
	_, err = live(t, extra)
	g.Expect(err).NotTo(HaveOccurred())
	cd, err := live(t, objs[2])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cd.Object["spec"]).To(HaveKeyWithValue("template", "aws-standalone-cp-1-0-12"))

	// A failing object that was never applied is not in the inventory.
	bad := mustDecode(t, ns, deliverySet)[2]
	bad.SetName("never")
	g.Expect(unstructured.SetNestedField(bad.Object, "", "spec", "template")).To(Succeed())
	res, err = sink.Apply(ctx, owner, append(objs[:2:2], bad), nil)
	g.Expect(err).To(MatchError(ContainSubstring("ClusterDeployment " + ns + "/never")))
	g.Expect(ids(res)).To(Equal([]string{ns + "_settings__ConfigMap", ns + "_token__Secret"}))
}

func TestDirectApply_ClusterScopedObjectsAndOrder(t *testing.T) {
	g := NewWithT(t)
	ctx, ns, owner, sink := setup(t, "order")
	target := ns + "-target"
	// The ConfigMap comes first but lives in the Namespace applied with it.
	objs := mustDecode(t, target, `
apiVersion: v1
kind: ConfigMap
metadata: {name: inside, namespace: NAMESPACE}
data: {k: v}
---
apiVersion: v1
kind: Namespace
metadata: {name: NAMESPACE, namespace: ignored}
`)
	res, err := sink.Apply(ctx, owner, objs, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ids(res)).To(Equal([]string{"_" + target + "__Namespace", target + "_inside__ConfigMap"}))
	t.Cleanup(func() { _, _ = sink.Delete(ctx, owner, res.Inventory) })

	_, err = sink.Apply(ctx, owner, []*unstructured.Unstructured{configMap("", "nowhere", nil)}, nil)
	g.Expect(err).To(MatchError(ContainSubstring("ConfigMap nowhere: a namespaced object needs a namespace")))
}

func TestDirectApply_RejectsOwnerWithoutName(t *testing.T) {
	g := NewWithT(t)
	ctx, _, _, sink := setup(t, "owner")
	_, err := sink.Apply(ctx, Owner{Kind: "Colony"}, nil, nil)
	g.Expect(err).To(HaveOccurred())
	_, err = sink.Delete(ctx, Owner{Name: "x"}, nil)
	g.Expect(err).To(HaveOccurred())
}

func TestDirectApply_ServerNormalisedValuesAreNotDrift(t *testing.T) {
	g := NewWithT(t)
	ctx, ns, owner, sink := setup(t, "normalise")
	// The API server stores 1000m as 1 and folds stringData into data.
	objs := mustDecode(t, ns, `
apiVersion: v1
kind: ResourceQuota
metadata: {name: quota, namespace: NAMESPACE}
spec:
  hard: {cpu: 1000m, memory: 1024Mi, pods: "10"}
---
apiVersion: v1
kind: Secret
metadata: {name: token, namespace: NAMESPACE}
data: {a: YQ==}
stringData: {b: b}
`)
	first, err := sink.Apply(ctx, owner, objs, nil)
	g.Expect(err).NotTo(HaveOccurred())
	quota, err := live(t, objs[0])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(quota.Object["spec"]).To(HaveKeyWithValue("hard", HaveKeyWithValue("cpu", "1")))
	waitCached(t, objs...)

	var res *Result
	reqs := requests.during(func() { res, err = sink.Apply(ctx, owner, objs, first.Inventory) })
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Changed).To(BeEmpty())
	g.Expect(reqs).To(BeEmpty())
}

func TestDirectApply_KindsOutsideTheSchemeAreReadUnstructured(t *testing.T) {
	g := NewWithT(t)
	ctx, ns, owner, _ := setup(t, "unstructured")
	sink := NewDirect(mgr.GetClient(), nil, DirectOptions{Scheme: runtime.NewScheme(), FieldManager: "apiary-test"})
	objs := mustDecode(t, ns, deliverySet)
	first, err := sink.Apply(ctx, owner, objs, nil)
	g.Expect(err).NotTo(HaveOccurred())
	cd, err := live(t, objs[2])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cd.GetManagedFields()).To(ContainElement(HaveField("Manager", "apiary-test")))

	var res *Result
	reqs := requests.during(func() { res, err = sink.Apply(ctx, owner, objs, first.Inventory) })
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.Changed).To(BeEmpty())
	g.Expect(writes(reqs)).To(BeEmpty(), "server defaults are not drift")
	g.Expect(reqs).To(HaveLen(len(objs)), "the manager's client reads unstructured objects from the API server")
}

func TestDirectDelete_IgnoresEntriesThatNameNoObject(t *testing.T) {
	g := NewWithT(t)
	ctx, ns, owner, sink := setup(t, "noobject")
	inv := &commonv1.ResourceInventory{Entries: []commonv1.ResourceRef{
		{ID: ns + "_gone__ConfigMap", Version: "v1"},
		{ID: ns + "_x_example.com_NotServed", Version: "v1"},
		{ID: "not-an-id", Version: "v1"},
	}}
	done, err := sink.Delete(ctx, owner, inv)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(done).To(BeTrue())

	res, err := sink.Apply(ctx, owner, nil, inv)
	g.Expect(err).To(MatchError(ContainSubstring(`inventory ID "not-an-id"`)))
	g.Expect(ids(res)).To(BeEmpty())
	g.Expect(res.Changed).To(BeEmpty())
}
