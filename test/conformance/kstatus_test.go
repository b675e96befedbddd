package conformance

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestNewObjectsReadInProgress creates each of Apiary's kinds as Flux or
// kubectl apply would, with no controller running, and reads it back: the
// CRD defaults status to observedGeneration -1, so kstatus (Flux's health
// checks) reads a new object as InProgress, not Current, until Apiary
// writes its status. A status in the manifest is dropped by the status
// subresource and defaulted the same.
func TestNewObjectsReadInProgress(t *testing.T) {
	ns := env.NewNamespace(t, "kstatus")
	tenantQuota := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "quota.apiary.dev/v1alpha1", "kind": "TenantQuota",
		"metadata": map[string]any{"name": "q"},
		"spec": map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"tenant": "a"}},
			"hard": map[string]any{"workspaces": int64(1)}},
	}}
	objects := map[string]*unstructured.Unstructured{
		"Colony":              readFixture(t, "colony.yaml", ns),
		"WorkspaceClass":      readFixture(t, "workspaceclass.yaml", ns),
		"WorkspaceDeployment": readFixture(t, "workspacedeployment.yaml", ns),
		"TenantQuota":         tenantQuota,
	}
	for kind, obj := range objects {
		for _, withStatus := range []bool{false, true} {
			name := kind
			if withStatus {
				name += " with a status in the manifest"
			}
			t.Run(name, func(t *testing.T) {
				g := NewWithT(t)
				ctx := context.Background()
				obj := obj.DeepCopy()
				if kind == "WorkspaceClass" || kind == "TenantQuota" {
					obj.SetName(obj.GetName() + "-" + rand.String(5)) // cluster-scoped
				} else {
					obj.SetNamespace(ns)
				}
				if withStatus {
					obj.SetName(obj.GetName() + "-s")
				}
				if withStatus {
					obj.Object["status"] = map[string]any{"observedGeneration": int64(1),
						"conditions": []any{map[string]any{"type": "Ready", "status": "True", "reason": "Forged",
							"message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}}}
				} else {
					delete(obj.Object, "status")
				}
				g.Expect(env.Client.Create(ctx, obj)).To(Succeed())
				t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })

				got := &unstructured.Unstructured{}
				got.SetGroupVersionKind(obj.GroupVersionKind())
				g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(obj), got)).To(Succeed())
				og, found, err := unstructured.NestedInt64(got.Object, "status", "observedGeneration")
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(found).To(BeTrue(), "status: %v", got.Object["status"])
				g.Expect(og).To(BeEquivalentTo(-1))
				g.Expect(got.Object["status"]).NotTo(HaveKey("conditions"), "the status subresource drops a status sent with the object")
				res, err := status.Compute(got)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(res.Status).To(Equal(status.InProgressStatus), res.Message)
			})
		}
	}
}
