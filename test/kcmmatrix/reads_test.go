package kcmmatrix

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	"github.com/apiaryhq/apiary/internal/k0rdentstatus"
	"github.com/apiaryhq/apiary/internal/testenv"
)

// stamp is the time of every status entry the checks write.
const stamp = "2026-12-01T10:00:00Z"

// svc is one entry of status.services as kcm writes it.
type svc struct {
	name, namespace, state, message, hash string
}

// entry is the JSON of a service state; hash is written only when set.
func (s svc) entry(template string) map[string]any {
	e := map[string]any{
		"type": "Helm", "name": s.name, "namespace": s.namespace, "template": template,
		"version": template, "state": s.state, "lastStateTransitionTime": stamp,
	}
	if s.message != "" {
		e["failureMessage"] = s.message
	}
	if s.hash != "" {
		e["lastDeployedHash"] = s.hash
	}
	return e
}

// condition is a metav1.Condition as JSON.
func condition(typ string, ok bool, reason, msg string, gen int64) map[string]any {
	status := "False"
	if ok {
		status = "True"
	}
	return map[string]any{"type": typ, "status": status, "reason": reason, "message": msg,
		"observedGeneration": gen, "lastTransitionTime": stamp}
}

// countReady is "<ready>/<total>" over the services neither Deleting nor
// Deleted, as ServicesInReadyState says it.
func countReady(states []svc) (string, bool) {
	ready, total := 0, 0
	for _, s := range states {
		if s.state == k0rdentv1beta1.ServiceStateDeleting || s.state == k0rdentv1beta1.ServiceStateDeleted {
			continue
		}
		total++
		if s.state == k0rdentv1beta1.ServiceStateDeployed {
			ready++
		}
	}
	return fmt.Sprintf("%d/%d", ready, total), ready == total
}

// serviceSetStatus is a ServiceSet status as the Sveltos adapter of kcm
// release r writes it (API-FACTS §3 and §12): conditions of generation gen,
// deployed iff every service is, and ServicesInReadyState from kcm 1.11.
func serviceSetStatus(r release, ss *unstructured.Unstructured, template string, gen int64, states ...svc) map[string]any {
	spec, _, _ := unstructured.NestedString(ss.Object, "spec", "cluster")
	conds := []any{
		condition(k0rdentv1beta1.ServiceSetProfileCondition, true, "ServiceSetProfileReady", "Profile is ready", gen),
		condition(k0rdentv1beta1.ServiceSetStatusesCollectedCondition, true, "ServiceSetStatusesCollected", "Statuses collected", gen),
	}
	msg, allReady := countReady(states)
	if r.deleted {
		reason := k0rdentv1beta1.SucceededReason
		if !allReady {
			reason = k0rdentv1beta1.FailedReason
		}
		conds = append(conds, condition(k0rdentv1beta1.ServiceSetServicesInReadyStateCondition, allReady, reason, msg, gen))
	}
	deployed := true
	var services []any
	for _, s := range states {
		services = append(services, s.entry(template))
		deployed = deployed && s.state == k0rdentv1beta1.ServiceStateDeployed
	}
	return map[string]any{
		"cluster": map[string]any{"apiVersion": k0rdentv1beta1.GroupVersion.String(), "kind": k0rdentv1beta1.ClusterDeploymentKind,
			"name": spec, "namespace": ss.GetNamespace()},
		"conditions": conds, "services": services, "deployed": deployed,
		"provider": map[string]any{"ready": true, "suspended": false},
	}
}

// clusterStatus is a ClusterDeployment status as kcm writes it for a
// provisioned cluster: Ready, its CAPI summary and the services of its
// ServiceSets.
func clusterStatus(gen int64, template string, states ...svc) map[string]any {
	msg, allReady := countReady(states)
	ready := condition(k0rdentv1beta1.ReadyCondition, true, k0rdentv1beta1.SucceededReason, "Object is ready", gen)
	servicesReason := k0rdentv1beta1.SucceededReason
	if !allReady {
		ready = condition(k0rdentv1beta1.ReadyCondition, false, k0rdentv1beta1.ProgressingReason, "Services are not ready: "+msg, gen)
		servicesReason = k0rdentv1beta1.FailedReason
	}
	var services []any
	for _, s := range states {
		services = append(services, s.entry(template))
	}
	return map[string]any{
		"observedGeneration": gen,
		"conditions": []any{
			ready,
			condition(k0rdentv1beta1.CAPIClusterSummaryCondition, true, k0rdentv1beta1.SucceededReason, "Cluster is ready", gen),
			condition(k0rdentv1beta1.TemplateReadyCondition, true, k0rdentv1beta1.SucceededReason, "Template is valid", gen),
			condition(k0rdentv1beta1.CredentialReadyCondition, true, k0rdentv1beta1.SucceededReason, "Credential is ready", gen),
			condition(k0rdentv1beta1.HelmReleaseReadyCondition, true, k0rdentv1beta1.SucceededReason, "Release is ready", gen),
			condition(k0rdentv1beta1.ServicesInReadyStateCondition, allReady, servicesReason, msg, gen),
		},
		"services": services,
	}
}

// writeStatus writes a status as kcm does, through the status subresource
// with strict field validation.
func writeStatus(ctx context.Context, c client.Client, obj *unstructured.Unstructured, status map[string]any) error {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(obj.GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKeyFromObject(obj), live); err != nil {
		return err
	}
	live.Object["status"] = status
	return c.Status().Update(ctx, live, client.FieldValidation("Strict"))
}

// readServiceSet reads a ServiceSet back through Apiary's typed client,
// after checking that it decodes strictly.
func readServiceSet(g Gomega, c client.Client, obj *unstructured.Unstructured) *k0rdentv1beta1.ServiceSet {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(obj.GroupVersionKind())
	g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(obj), u)).To(Succeed())
	strictDecode(g, u, "ServiceSet "+obj.GetName())
	ss := &k0rdentv1beta1.ServiceSet{}
	g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(obj), ss)).To(Succeed())
	return ss
}

// checkReads writes the statuses kcm release r writes and reads them
// through Apiary's readers: a release is Deployed, Pending (provisioning,
// or deployed at an older generation), Failed, and, from kcm 1.11, Deleted
// (gone, never pending); the ClusterDeployment is Ready whatever Deleted
// services it lists.
func checkReads(t *testing.T, env *testenv.Environment, r release, w written) {
	ctx := context.Background()
	for _, obj := range []*unstructured.Unstructured{w.cluster, w.workspace, w.prerequisite} {
		if err := apply(ctx, env.Client, obj.DeepCopy()); err != nil {
			t.Fatalf("applying %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
	tpl := "jupyter-notebook-0-3-0"
	hash := func(h string) string {
		if r.hash {
			return h
		}
		return ""
	}
	type scenario struct {
		name    string
		gen     int64 // the conditions' observedGeneration; 0 means the object's
		states  []svc
		outcome k0rdentstatus.ReleaseOutcome
		message string
	}
	rel := w.release
	scenarios := []scenario{
		{name: "deployed", states: []svc{{rel, "ws-my-notebook", "Deployed", "", hash("5f2b9c0d4e1a7b3c")}},
			outcome: k0rdentstatus.ReleaseDeployed},
		{name: "provisioning again", states: []svc{{rel, "ws-my-notebook", "Provisioning", "", hash("5f2b9c0d4e1a7b3c")}},
			outcome: k0rdentstatus.ReleasePending},
		{name: "pending", states: []svc{{rel, "ws-my-notebook", "Pending", "", ""}}, outcome: k0rdentstatus.ReleasePending},
		{name: "deployed at an older generation", gen: -1, states: []svc{{rel, "ws-my-notebook", "Deployed", "", hash("5f2b9c0d4e1a7b3c")}},
			outcome: k0rdentstatus.ReleasePending},
		{name: "failed", states: []svc{{rel, "ws-my-notebook", "Failed", "context deadline exceeded", ""}},
			outcome: k0rdentstatus.ReleaseFailed, message: "context deadline exceeded"},
	}
	if r.deleted {
		scenarios = append(scenarios,
			scenario{name: "deleted", states: []svc{{rel, "ws-my-notebook", "Deleted", "", hash("5f2b9c0d4e1a7b3c")}},
				outcome: k0rdentstatus.ReleaseDeleted},
			scenario{name: "deleted beside another service", states: []svc{
				{"other", "ws-other", "Provisioning", "", ""}, {rel, "ws-my-notebook", "Deleted", "", ""}},
				outcome: k0rdentstatus.ReleaseDeleted})
	}
	for _, sc := range scenarios {
		t.Run("workspace "+sc.name, func(t *testing.T) {
			g := NewWithT(t)
			gen := readServiceSet(g, env.Client, w.workspace).Generation
			if sc.gen < 0 {
				gen--
			}
			g.Expect(writeStatus(ctx, env.Client, w.workspace, serviceSetStatus(r, w.workspace, tpl, gen, sc.states...))).To(Succeed())
			ss := readServiceSet(g, env.Client, w.workspace)
			v := k0rdentstatus.ReleaseVerdict(ss, rel, nil, 15*time.Minute, time.Now())
			g.Expect(v.Outcome).To(Equal(sc.outcome), "seen: %s", v.Seen)
			g.Expect(v.FailureMessage).To(Equal(sc.message))
			if r.hash {
				g.Expect(ss.Status.Services[len(ss.Status.Services)-1].LastDeployedHash).To(Equal(sc.states[len(sc.states)-1].hash))
			}
		})
	}

	t.Run("prerequisite", func(t *testing.T) {
		g := NewWithT(t)
		gen := readServiceSet(g, env.Client, w.prerequisite).Generation
		states := []svc{{w.prereqRelease, "gpu-operator", "Deployed", "", hash("0c1d2e3f4a5b6c7d")}}
		g.Expect(writeStatus(ctx, env.Client, w.prerequisite, serviceSetStatus(r, w.prerequisite, "gpu-operator-v25-3-0", gen, states...))).To(Succeed())
		v := k0rdentstatus.ReleaseVerdict(readServiceSet(g, env.Client, w.prerequisite), w.prereqRelease, nil, time.Minute, time.Now())
		g.Expect(v.Outcome).To(Equal(k0rdentstatus.ReleaseDeployed))
	})

	t.Run("cluster", func(t *testing.T) {
		g := NewWithT(t)
		states := []svc{{rel, "ws-my-notebook", "Deployed", "", hash("5f2b9c0d4e1a7b3c")}}
		if r.deleted {
			states = append(states, svc{"removed", "ws-removed", "Deleted", "", ""})
		}
		cd := &k0rdentv1beta1.ClusterDeployment{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(w.cluster), cd)).To(Succeed())
		g.Expect(writeStatus(ctx, env.Client, w.cluster, clusterStatus(cd.Generation, tpl, states...))).To(Succeed())
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(w.cluster.GroupVersionKind())
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(w.cluster), u)).To(Succeed())
		strictDecode(g, u, "ClusterDeployment "+w.cluster.GetName())
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(w.cluster), cd)).To(Succeed())
		g.Expect(cd.Status.Services).To(HaveLen(len(states)))
		g.Expect(k0rdentstatus.ClusterDeploymentState(cd).Phase).To(Equal(k0rdentstatus.PhaseReady))
		ok, msg := k0rdentstatus.ClusterProvisioned(cd)
		g.Expect(ok).To(BeTrue(), msg)
	})
}

// checkNewerShapes shows the CRD set is the release's: a Deleted service
// is accepted from kcm 1.11 on and refused before, lastDeployedHash from
// kcm 1.12 on and refused before (strict field validation).
func checkNewerShapes(t *testing.T, env *testenv.Environment, r release, w written) {
	ctx := context.Background()
	g := NewWithT(t)
	gen := readServiceSet(g, env.Client, w.workspace).Generation
	v112 := release{version: "v1.12", deleted: true, hash: true}
	deleted := serviceSetStatus(v112, w.workspace, "t", gen, svc{w.release, "ws-my-notebook", "Deleted", "", ""})
	hashed := serviceSetStatus(release{}, w.workspace, "t", gen, svc{w.release, "ws-my-notebook", "Deployed", "", "5f2b9c0d4e1a7b3c"})
	expect := func(ok bool) OmegaMatcher {
		if ok {
			return Succeed()
		}
		return HaveOccurred()
	}
	g.Expect(writeStatus(ctx, env.Client, w.workspace, deleted)).To(expect(r.deleted), "a Deleted service on a ServiceSet")
	g.Expect(writeStatus(ctx, env.Client, w.workspace, hashed)).To(expect(r.hash), "lastDeployedHash on a ServiceSet")
	cd := &k0rdentv1beta1.ClusterDeployment{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(w.cluster), cd)).To(Succeed())
	g.Expect(writeStatus(ctx, env.Client, w.cluster, clusterStatus(cd.Generation, "t", svc{"gone", "ws-gone", "Deleted", "", ""}))).
		To(expect(r.deleted), "a Deleted service on a ClusterDeployment")
}
