package hostile_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/test/world"
)

const workspaceCRD = "workspacedeployments.workspaces.exalsius.ai"

var crdKind = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// setLifetimeSchema replaces the schema of spec.lifecycle.lifetime in
// every version of the WorkspaceDeployment CRD, or restores the CRD's spec
// when restore is set.
func setLifetimeSchema(ctx context.Context, restore map[string]any) (previous map[string]any, err error) {
	crd := &unstructured.Unstructured{}
	crd.SetGroupVersionKind(crdKind)
	if err := env.Client.Get(ctx, client.ObjectKey{Name: workspaceCRD}, crd); err != nil {
		return nil, err
	}
	previous, _, _ = unstructured.NestedMap(crd.Object, "spec")
	if restore != nil {
		crd.Object["spec"] = restore
		return previous, env.Client.Update(ctx, crd)
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	for _, v := range versions {
		m := v.(map[string]any)
		_ = unstructured.SetNestedField(m, map[string]any{"type": "string"},
			"schema", "openAPIV3Schema", "properties", "spec", "properties", "lifecycle", "properties", "lifetime")
	}
	_ = unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions")
	return previous, env.Client.Update(ctx, crd)
}

// badWorkspace is a workspace whose lifetime no Go duration parses.
func badWorkspace(ns, name, cls string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"workspaceClassRef":    cls,
			"clusterDeploymentRef": map[string]any{"name": "c1", "namespace": ns},
			"lifecycle":            map[string]any{"lifetime": "banana"},
		},
	}}
	u.SetGroupVersionKind(workspacesv1.GroupVersion.WithKind("WorkspaceDeployment"))
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// Test30UndecodableWorkspaceBlindsNoOne (issue 30, item 0): a workspace
// written with lifetime: banana while the CRD let it through stays in etcd
// after the CRD is tightened, and Apiary cannot decode it. Another tenant's
// workspace still reacts to a spec change (a stop), the tightened CRD
// refuses the value, and the undecodable workspace is told why nothing
// happens to it: Stalled=True, reason Undecodable, and a Warning event.
func Test30UndecodableWorkspaceBlindsNoOne(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()

	victimNS := tenant(t, "decode-victim")
	victim := workspace(victimNS, "victim", class(t, victimNS, nil), "c1")
	create(t, victim)
	world.EventuallyPhase(t, env.Client, victim, workspacesv1.PhaseRunning)

	// The CRD as it was before it validated lifetimes.
	strict, err := setLifetimeSchema(ctx, nil)
	g.Expect(err).NotTo(HaveOccurred())
	tightened := false
	t.Cleanup(func() {
		if !tightened {
			g := NewWithT(t)
			g.Eventually(func() error { _, err := setLifetimeSchema(ctx, strict); return err }, timeout, 200*time.Millisecond).Should(Succeed())
		}
	})

	badNS := tenant(t, "decode-bad")
	bad := badWorkspace(badNS, "banana", class(t, badNS, nil))
	g.Eventually(func() error { return env.Client.Create(ctx, bad.DeepCopy()) }, timeout, 200*time.Millisecond).
		Should(Succeed(), "the loose CRD takes lifetime: banana")
	t.Cleanup(func() {
		// Whatever the manager did or did not do: its finalizer goes, then
		// the object (neither needs the object to decode).
		key := client.ObjectKeyFromObject(bad)
		u := bad.DeepCopy()
		_ = env.Client.Patch(context.Background(), u, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
		_ = env.Client.Delete(context.Background(), u)
		NewWithT(t).Eventually(func() bool {
			return apierrors.IsNotFound(env.Client.Get(context.Background(), key, u.DeepCopy()))
		}, timeout, 200*time.Millisecond).Should(BeTrue())
	})

	// The CRD tightened again: the bad object stays.
	g.Eventually(func() error { _, err := setLifetimeSchema(ctx, strict); return err }, timeout, 200*time.Millisecond).Should(Succeed())
	tightened = true
	g.Eventually(func() bool {
		err := env.Client.Create(ctx, badWorkspace(badNS, "banana-again", bad.Object["spec"].(map[string]any)["workspaceClassRef"].(string)))
		return apierrors.IsInvalid(err)
	}, timeout, 200*time.Millisecond).Should(BeTrue(), "the real CRD refuses lifetime: banana")

	// Another tenant's stop is acted on.
	g.Eventually(func() error {
		w := get(g, victim)
		w.Spec.Lifecycle = &workspacesv1.WorkspaceLifecycle{Stopped: true}
		return env.Client.Update(ctx, w)
	}, timeout, 200*time.Millisecond).Should(Succeed())
	world.EventuallyPhase(t, env.Client, victim, workspacesv1.PhaseStopped)

	// The undecodable workspace says why nothing happens to it.
	g.Eventually(func(g Gomega) {
		u := bad.DeepCopy()
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(bad), u)).To(Succeed())
		lifetime, _, _ := unstructured.NestedString(u.Object, "spec", "lifecycle", "lifetime")
		g.Expect(lifetime).To(Equal("banana"), "the tenant's object is never rewritten")
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		var stalled map[string]any
		for _, c := range conds {
			if m := c.(map[string]any); m["type"] == commonv1.StalledCondition {
				stalled = m
			}
		}
		g.Expect(stalled).NotTo(BeNil(), "conditions: %v", conds)
		g.Expect(stalled["status"]).To(Equal("True"))
		g.Expect(stalled["reason"]).To(Equal(commonv1.UndecodableReason))
		g.Expect(stalled["message"]).To(ContainSubstring(`invalid duration "banana"`))
		events := &corev1.EventList{}
		g.Expect(env.Client.List(ctx, events, client.InNamespace(badNS))).To(Succeed())
		found := false
		for _, e := range events.Items {
			found = found || (e.InvolvedObject.Name == bad.GetName() && e.Reason == commonv1.UndecodableReason && e.Type == corev1.EventTypeWarning)
		}
		g.Expect(found).To(BeTrue(), "a Warning event Undecodable on the workspace")
	}, timeout, 200*time.Millisecond).Should(Succeed())
}
