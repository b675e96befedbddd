package hostile_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	quotav1alpha1 "github.com/apiaryhq/apiary/api/quota/v1alpha1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/delivery/flux"
	"github.com/apiaryhq/apiary/test/world"
)

// Test10ForgedFluxLabelsDoNotEscapeDelete (issue 30, item 10): a tenant
// puts Flux's labels on its own workspace, naming a Kustomization that does
// not apply it; under a class whose expiryPolicy is Delete, the expired
// workspace is deleted all the same. A workspace that a Kustomization's
// inventory does list is stopped instead, with ExpiryDeleteRefused.
func Test10ForgedFluxLabelsDoNotEscapeDelete(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := tenant(t, "fluxlabel")
	cls := class(t, ns, func(c *workspacesv1.WorkspaceClass) {
		c.Spec.Lifecycle = &workspacesv1.ClassLifecycle{ExpiryPolicy: workspacesv1.ExpiryDelete}
	})
	// A Kustomization of the tenant's namespace whose inventory lists
	// "applied" only (its status as kustomize-controller would write it).
	ks := &unstructured.Unstructured{}
	ks.SetGroupVersionKind(flux.KustomizationGVK)
	ks.SetNamespace(ns)
	ks.SetName("apps")
	g.Expect(unstructured.SetNestedMap(ks.Object, map[string]any{"interval": "10m", "prune": true, "path": "./",
		"sourceRef": map[string]any{"kind": "GitRepository", "name": "apps"}}, "spec")).To(Succeed())
	create(t, ks)
	g.Expect(unstructured.SetNestedSlice(ks.Object, []any{map[string]any{
		"id": ns + "_applied_" + workspacesv1.GroupVersion.Group + "_WorkspaceDeployment", "v": "v1"}},
		"status", "inventory", "entries")).To(Succeed())
	g.Expect(env.Client.Status().Update(ctx, ks)).To(Succeed())

	expiring := func(name string) *workspacesv1.WorkspaceDeployment {
		w := workspace(ns, name, cls, "c1")
		w.Labels = map[string]string{"kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": ns}
		w.Spec.Lifecycle = &workspacesv1.WorkspaceLifecycle{Lifetime: &metav1.Duration{Duration: 5 * time.Second}}
		return w
	}
	forged, applied := expiring("forged"), expiring("applied")
	create(t, forged)
	create(t, applied)

	g.Eventually(func() bool {
		err := env.Client.Get(ctx, client.ObjectKeyFromObject(forged), &workspacesv1.WorkspaceDeployment{})
		return apierrors.IsNotFound(err)
	}, timeout, 200*time.Millisecond).Should(BeTrue(), "the expired workspace with forged Flux labels is deleted")
	g.Eventually(func(g Gomega) {
		w := get(g, applied)
		c := condition(w, workspacesv1.ExpiresSoonCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(workspacesv1.ExpiryDeleteRefusedReason))
		g.Expect(w.Status.Lifecycle).NotTo(BeNil())
		g.Expect(w.Status.Lifecycle.StopRequestedAt).NotTo(BeNil(), "the workspace Flux applies is stopped")
	}, timeout, 200*time.Millisecond).Should(Succeed())
}

// Test11StoppedWorkspacesKeepTheirPlace (issue 30, item 11): a tenant at
// its TenantQuota's workspaces limit stops a workspace (whose namespace and
// volumes stay) and creates another: the new one waits on the quota, the
// stopped one still counts, and only its CPU is given back.
func Test11StoppedWorkspacesKeepTheirPlace(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := tenant(t, "stopcount")
	labelNamespace(t, ns, map[string]string{"tenant": ns})
	quotaName := "stopcount-" + ns
	create(t, &quotav1alpha1.TenantQuota{ObjectMeta: metav1.ObjectMeta{Name: quotaName}, Spec: quotav1alpha1.TenantQuotaSpec{
		NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"tenant": ns}},
		Hard:              quotav1alpha1.QuotaLimits{Workspaces: ptr.To[int64](1), CPU: ptr.To(resource.MustParse("8"))},
	}})
	cls := class(t, ns, nil)
	first := workspace(ns, "first", cls, "c1")
	first.Spec.Resources = &workspacesv1.WorkspaceResourceSpec{Replicas: ptr.To[int32](1),
		PerReplica: &workspacesv1.PerReplicaResources{CPU: ptr.To(resource.MustParse("2"))}}
	create(t, first)
	world.EventuallyPhase(t, env.Client, first, workspacesv1.PhaseRunning)

	w := get(g, first)
	w.Spec.Lifecycle = &workspacesv1.WorkspaceLifecycle{Stopped: true}
	g.Expect(env.Client.Update(ctx, w)).To(Succeed())
	world.EventuallyPhase(t, env.Client, first, workspacesv1.PhaseStopped)

	second := workspace(ns, "second", cls, "c1")
	create(t, second)
	g.Eventually(func(g Gomega) {
		w := get(g, second)
		g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseWaiting), "message: %s", w.Status.Message)
		c := condition(w, workspacesv1.QuotaReservedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(workspacesv1.QuotaExceededReason))
		q := &quotav1alpha1.TenantQuota{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: quotaName}, q)).To(Succeed())
		g.Expect(q.Status.Used.Workspaces).To(Equal(int64(1)), "the stopped workspace holds its place")
		g.Expect(q.Status.Used.CPU == nil || q.Status.Used.CPU.IsZero()).To(BeTrue(), "its CPU is given back: %v", q.Status.Used.CPU)
	}, timeout, 200*time.Millisecond).Should(Succeed())
	g.Consistently(func() workspacesv1.WorkspacePhase { return get(g, second).Status.Phase }, 3*time.Second, 200*time.Millisecond).
		Should(Equal(workspacesv1.PhaseWaiting))
}
