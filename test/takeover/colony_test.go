package takeover_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	"github.com/apiaryhq/apiary/internal/delivery"
	"github.com/apiaryhq/apiary/internal/manager"
	"github.com/apiaryhq/apiary/test/managertest"
	"github.com/apiaryhq/apiary/test/world/builder"
)

// TestColonyClusterDeploymentsAreAdopted: a Colony the exalsius operator
// provisioned keeps its ClusterDeployment (same UID, never deleted) when
// Apiary takes over. Server-side apply then owns the fields Apiary renders:
// a label the operator set that the Colony no longer has is removed on
// adoption, the operator's field manager keeps none of the rendered fields,
// and a label and a config key later removed from the Colony are removed
// from the ClusterDeployment. Kcm's finalizer and the Colony's own are
// honoured: deleting the Colony releases the operator's finalizer.
func TestColonyClusterDeploymentsAreAdopted(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "adopt-colony")
	builder.Templates(t, env.Client, ns)
	entry := infrav1.ColonyCluster{ClusterName: "a",
		ClusterLabels:      map[string]string{"team": "a", "tier": "gold"},
		ClusterAnnotations: map[string]string{"note": "kept"}}
	spec := map[string]any{"template": "tpl", "credential": "cred", "config": map[string]any{"region": "eu", "zone": "1"}}
	old := operatorColony(t, ns, "col", entry, spec, "dropped")
	g.Eventually(func(g Gomega) {
		cd := &k0rdentv1beta1.ClusterDeployment{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(old.Cluster), cd)).To(Succeed())
		g.Expect(cd.Labels).To(HaveKey("dropped"))
	}, timeout, poll).Should(Succeed())
	// kcm sets serviceSpec fields Apiary does not render; they stay.
	kcm := client.WithFieldOwner(env.Client, "kcm")
	patch := []byte(`{"spec":{"serviceSpec":{"syncMode":"Continuous","stopOnConflict":true}}}`)
	g.Expect(kcm.Patch(ctx, old.Cluster.DeepCopy(), client.RawPatch(types.MergePatchType, patch))).To(Succeed())
	events := watchClusterDeployments(t, ns)

	apiary(t)
	cd := &k0rdentv1beta1.ClusterDeployment{}
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(old.Cluster), cd)).To(Succeed())
		g.Expect(cd.Annotations).To(HaveKey(delivery.AnnotationAppliedDigest))
	}, timeout, poll).Should(Succeed())
	g.Expect(cd.UID).To(Equal(old.Cluster.UID), "the same ClusterDeployment")
	g.Expect(cd.Labels).To(SatisfyAll(HaveKeyWithValue("team", "a"), HaveKeyWithValue("tier", "gold"), Not(HaveKey("dropped"))),
		"the label the operator kept after the Colony dropped it is removed")
	g.Expect(cd.Annotations).To(SatisfyAll(HaveKeyWithValue("note", "kept"), HaveKeyWithValue(delivery.AnnotationAdopted, operatorFieldManager)))
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(k0rdentv1beta1.GroupVersion.WithKind("ClusterDeployment"))
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(cd), u)).To(Succeed())
	g.Expect(u.Object["spec"]).To(HaveKeyWithValue("serviceSpec", SatisfyAll(
		HaveKeyWithValue("syncMode", "Continuous"), HaveKeyWithValue("stopOnConflict", true))), "kcm's fields are kept")
	g.Expect(cd.OwnerReferences).To(ContainElement(SatisfyAll(HaveField("UID", old.Colony.UID), HaveField("Controller", HaveValue(BeTrue())))))
	for _, path := range [][]string{
		{"f:metadata", "f:labels", "f:team"},
		{"f:metadata", "f:annotations", "f:note"},
		{"f:spec", "f:template"},
		{"f:spec", "f:config"},
	} {
		g.Expect(managerOwns(g, cd, delivery.DefaultFieldManager, metav1.ManagedFieldsOperationApply, path...)).To(BeTrue(), "apiary owns %v", path)
		g.Expect(managerOwns(g, cd, operatorFieldManager, metav1.ManagedFieldsOperationUpdate, path...)).To(BeFalse(), "the operator no longer owns %v", path)
	}

	// Later removals in the Colony reach the ClusterDeployment.
	spec["config"] = map[string]any{"region": "eu"}
	raw, err := json.Marshal(spec)
	g.Expect(err).NotTo(HaveOccurred())
	// The manager writes the Colony's status meanwhile: a conflict is read again.
	col := &infrav1.Colony{}
	g.Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(old.Colony), col); err != nil {
			return err
		}
		delete(col.Spec.ColonyClusters[0].ClusterLabels, "tier")
		col.Spec.ColonyClusters[0].ClusterDeploymentSpec = &runtime.RawExtension{Raw: raw}
		return env.Client.Update(ctx, col)
	})).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(old.Cluster), cd)).To(Succeed())
		g.Expect(cd.Labels).NotTo(HaveKey("tier"))
		var config map[string]any
		g.Expect(json.Unmarshal(cd.Spec.Config.Raw, &config)).To(Succeed())
		g.Expect(config).To(Equal(map[string]any{"region": "eu"}))
	}, timeout, poll).Should(Succeed(), "a label and a config key removed from the Colony are removed")
	g.Expect(cd.UID).To(Equal(old.Cluster.UID))
	g.Expect(cd.Labels).To(HaveKeyWithValue("team", "a"))
	g.Expect(cd.Annotations).NotTo(HaveKey(delivery.AnnotationAdopted), "settled by the change")
	g.Expect(managerOwns(g, cd, delivery.DefaultFieldManager, metav1.ManagedFieldsOperationUpdate)).To(BeFalse(),
		"what the adopting Update wrote is Apiary's applied fields now")

	// The aggregated Secret keeps its name and references.
	secret := &corev1.Secret{}
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(old.Secret), secret)).To(Succeed())
		g.Expect(secret.Data).To(HaveKey(old.Cluster.Name))
	}, timeout, poll).Should(Succeed())
	g.Expect(secret.UID).To(Equal(old.Secret.UID))
	g.Expect(events.deleted()).To(BeZero(), "the ClusterDeployment is never deleted while adopted")

	// Deleting the Colony releases the operator's finalizer and its cluster.
	g.Expect(env.Client.Delete(ctx, col)).To(Succeed())
	g.Eventually(func() bool {
		return apierrorsIsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(col), &infrav1.Colony{}))
	}, timeout, poll).Should(BeTrue(), "the Colony's finalizer is released")
	g.Eventually(func() bool {
		return apierrorsIsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(old.Cluster), &k0rdentv1beta1.ClusterDeployment{}))
	}, timeout, poll).Should(BeTrue(), "its ClusterDeployment is deleted with it")
}

// cdEvents counts the deletions of ClusterDeployments in a namespace.
type cdEvents struct{ deletes chan struct{} }

func (e *cdEvents) deleted() int { return len(e.deletes) }

func watchClusterDeployments(t *testing.T, ns string) *cdEvents {
	t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	watcher, err := wc.Watch(context.Background(), &k0rdentv1beta1.ClusterDeploymentList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(watcher.Stop)
	e := &cdEvents{deletes: make(chan struct{}, 100)}
	go func() {
		for ev := range watcher.ResultChan() {
			if ev.Type == watch.Deleted {
				e.deletes <- struct{}{}
			}
		}
	}()
	return e
}

// TestWithoutAdoptionTheOperatorKeepsItsFields is the control: with
// --adopt-field-managers empty, Apiary applies over the operator's
// ClusterDeployment, the same object, but the operator's field manager
// stays a co-owner of what Apiary renders, so the label it left stays.
func TestWithoutAdoptionTheOperatorKeepsItsFields(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "noadopt")
	builder.Templates(t, env.Client, ns)
	entry := infrav1.ColonyCluster{ClusterName: "a", ClusterLabels: map[string]string{"team": "a"}}
	old := operatorColony(t, ns, "col", entry, map[string]any{"template": "tpl", "credential": "cred", "config": map[string]any{}}, "dropped")
	managertest.Start(t, manager.Options{RestConfig: env.Config, InventoryInterval: time.Minute, NoCrossNamespaceRefs: true})
	cd := &k0rdentv1beta1.ClusterDeployment{}
	g.Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(old.Cluster), cd)).To(Succeed())
		g.Expect(cd.Annotations).To(HaveKey(delivery.AnnotationAppliedDigest))
	}, timeout, poll).Should(Succeed())
	g.Expect(cd.UID).To(Equal(old.Cluster.UID))
	g.Expect(cd.Labels).To(HaveKey("dropped"), "nothing removes it")
	g.Expect(cd.Annotations).NotTo(HaveKey(delivery.AnnotationAdopted))
	g.Expect(managerOwns(g, cd, operatorFieldManager, metav1.ManagedFieldsOperationUpdate, "f:metadata", "f:labels", "f:team")).To(BeTrue(),
		"the operator still co-owns the label Apiary renders")
}
