package gitops_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/test/world/builder"
)

// docHealthCheckExprs returns the healthCheckExprs of the Kustomization in
// docs/flux-health-checks.md, the one source of them, as unstructured data.
func docHealthCheckExprs(t *testing.T) []any {
	t.Helper()
	exprs, err := testenv.HealthCheckExprs()
	if err != nil || len(exprs) != 3 {
		t.Fatalf("healthCheckExprs of the doc: %d, %v", len(exprs), err)
	}
	data, err := json.Marshal(exprs)
	if err != nil {
		t.Fatal(err)
	}
	var out []any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestFluxHealthCheckExprs has the real kustomize-controller apply
// WorkspaceDeployments with wait: true and the documented healthCheckExprs:
// the Kustomization is Ready once the workspace Runs, and fails its health
// check once a workspace Fails.
func TestFluxHealthCheckExprs(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "health")
	k0rdentFixtures(t, ns)
	c := colony(ns, "fleet", "gpu")
	g.Expect(env.Client.Create(ctx, c)).To(Succeed())
	eventuallyTrue(t, c, commonv1.ReadyCondition)
	class := builder.NewClass(ns, "notebook", builder.Named("nb-"+ns))
	g.Expect(env.Client.Create(ctx, class)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), class) })

	repo := ns + ".git"
	g.Expect(gitServer.InitRepo(repo, branch)).To(Succeed())
	wsd := func(name, values string) []byte {
		return fmt.Appendf(nil, `apiVersion: workspaces.exalsius.ai/v1
kind: WorkspaceDeployment
metadata:
  name: %s
  namespace: %s
spec:
  workspaceClassRef: %s
  clusterDeploymentRef:
    name: fleet-gpu
    namespace: %s
  values: %s
`, name, ns, class.Name, ns, values)
	}
	_, err := gitServer.Commit(repo, branch, "a workspace", map[string][]byte{"good.yaml": wsd("good", `{"greeting":"hello"}`)})
	g.Expect(err).NotTo(HaveOccurred())

	objs, err := testenv.FluxSync{Namespace: fluxNS, Name: ns, URL: gitServer.RepoURL(repo), Branch: branch,
		Path: ".", SecretRef: credentialsSecret}.Objects()
	g.Expect(err).NotTo(HaveOccurred())
	var ks *unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() == "Kustomization" {
			ks = o
			g.Expect(unstructured.SetNestedField(o.Object, true, "spec", "wait")).To(Succeed())
			g.Expect(unstructured.SetNestedField(o.Object, "45s", "spec", "timeout")).To(Succeed())
			g.Expect(unstructured.SetNestedSlice(o.Object, docHealthCheckExprs(t), "spec", "healthCheckExprs")).To(Succeed())
		}
		g.Expect(env.Client.Create(ctx, o)).To(Succeed())
		o := o
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), o) })
	}
	g.Expect(ks).NotTo(BeNil())
	ready := func(g Gomega) *metav1.Condition {
		got := &unstructured.Unstructured{}
		got.SetGroupVersionKind(ks.GroupVersionKind())
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ks), got)).To(Succeed())
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		var list []metav1.Condition
		for _, c := range conds {
			m, _ := c.(map[string]any)
			list = append(list, metav1.Condition{Type: fmt.Sprint(m["type"]), Status: metav1.ConditionStatus(fmt.Sprint(m["status"])),
				Reason: fmt.Sprint(m["reason"]), Message: fmt.Sprint(m["message"])})
		}
		c := apimeta.FindStatusCondition(list, "Ready")
		g.Expect(c).NotTo(BeNil())
		return c
	}

	good := &workspacesv1.WorkspaceDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "good"}}
	g.Eventually(func(g Gomega) {
		c := ready(g)
		g.Expect(c.Status).To(Equal(metav1.ConditionTrue), "%s: %s", c.Reason, c.Message)
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(good), good)).To(Succeed())
		g.Expect(good.Status.Phase).To(Equal(workspacesv1.PhaseRunning), "Ready only once the workspace runs")
	}).WithTimeout(2 * timeout).WithPolling(500 * time.Millisecond).Should(Succeed())

	// A workspace whose values set Apiary's reserved key fails: so does the
	// Kustomization's health check.
	_, err = gitServer.Commit(repo, branch, "a failing workspace", map[string][]byte{
		"bad.yaml": wsd("bad", `{"_exalsius":{"resources":{"perReplica":{"gpuCount":3}}}}`)})
	g.Expect(err).NotTo(HaveOccurred())
	// Ask the GitRepository to fetch now, as Apiary does after its pushes.
	for _, o := range objs {
		if o.GetKind() == "GitRepository" {
			patch := fmt.Appendf(nil, `{"metadata":{"annotations":{"reconcile.fluxcd.io/requestedAt":%q}}}`, time.Now().Format(time.RFC3339Nano))
			g.Expect(env.Client.Patch(ctx, o, client.RawPatch(types.MergePatchType, patch))).To(Succeed())
		}
	}
	g.Eventually(func(g Gomega) {
		c := ready(g)
		g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(c.Reason).To(Equal("HealthCheckFailed"), c.Message)
		// Failed by the failed expression, not by the timeout.
		g.Expect(c.Message).To(ContainSubstring("failed early due to stalled resources"))
		g.Expect(c.Message).To(ContainSubstring("WorkspaceDeployment/" + ns + "/bad status: 'Failed'"))
	}).WithTimeout(2 * timeout).WithPolling(500 * time.Millisecond).Should(Succeed())
	bad := &workspacesv1.WorkspaceDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad"}}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(bad), bad)).To(Succeed())
	g.Expect(bad.Status.Phase).To(Equal(workspacesv1.PhaseFailed))
}
