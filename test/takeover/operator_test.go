package takeover_test

import (
	"context"
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

// This file writes what the exalsius operator (v0.11.1 and HEAD, see the
// reference inventory) leaves in a cluster, with its client: Create, then
// Update for finalizers and Status().Update for status.

var jsonUnmarshal = json.Unmarshal

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// operatorClass creates a WorkspaceClass of the template "tmpl" of ns with
// default values, as an administrator does, and marks it valid as the
// operator does (status only: the operator adds no finalizer to classes).
func operatorClass(t *testing.T, ns, name string, defaults map[string]any, prereqs ...workspacesv1.PrerequisiteSpec) *workspacesv1.WorkspaceClass {
	t.Helper()
	ctx := context.Background()
	c := &workspacesv1.WorkspaceClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: workspacesv1.WorkspaceClassSpec{
		DisplayName:     name,
		ServiceTemplate: workspacesv1.ServiceTemplateRef{Name: "tmpl", Namespace: ns},
		DefaultValues:   &apiextensionsv1.JSON{Raw: mustJSON(t, defaults)},
		Prerequisites:   prereqs,
	}}
	if err := env.Client.Create(ctx, c); err != nil {
		t.Fatalf("creating WorkspaceClass: %v", err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), c) })
	c.Status.Valid = true
	c.Status.ObservedGeneration = c.Generation
	if err := operator().Status().Update(ctx, c); err != nil {
		t.Fatalf("writing the class status: %v", err)
	}
	return c
}

// running is what the exalsius operator leaves for a workspace it deployed:
// the WorkspaceDeployment with its finalizer and Running status, its child
// namespace ws-<name> with the workspace and mesh labels, and its ServiceSet
// wsd-<cd>-<name> with the operator's label, a non-controller owner
// reference to the workspace, and one service whose values are the JSON
// text given.
type running struct {
	Workspace  *workspacesv1.WorkspaceDeployment
	ServiceSet *k0rdentv1beta1.ServiceSet
}

func operatorWorkspace(t *testing.T, ns, name, class, valuesJSON string, user map[string]any) running {
	t.Helper()
	ctx := context.Background()
	w := &workspacesv1.WorkspaceDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: workspacesv1.WorkspaceDeploymentSpec{
			WorkspaceClassRef:    class,
			ClusterDeploymentRef: workspacesv1.ClusterDeploymentReference{Name: "c1", Namespace: ns},
		},
	}
	if user != nil {
		w.Spec.Values = &apiextensionsv1.JSON{Raw: mustJSON(t, user)}
	}
	if err := env.Client.Create(ctx, w); err != nil {
		t.Fatalf("creating workspace %s: %v", name, err)
	}
	w.Finalizers = append(w.Finalizers, workspacesv1.WorkspaceDeploymentFinalizer)
	if err := operator().Update(ctx, w); err != nil {
		t.Fatalf("adding the operator's finalizer: %v", err)
	}
	release := "wsd-c1-" + name
	if err := child.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ws-" + name, Labels: map[string]string{
		"workspaces.exalsius.ai/workspace": name,
		"istio.io/dataplane-mode":          "ambient",
		"istio.io/use-waypoint":            "c1-waypoint",
		"istio.io/use-waypoint-namespace":  "istio-system",
		"istio.io/ingress-use-waypoint":    "true",
	}}}); err != nil {
		t.Fatalf("creating the child namespace: %v", err)
	}
	wait, timeout := true, metav1.Duration{Duration: 15 * 60e9}
	ss := &k0rdentv1beta1.ServiceSet{
		ObjectMeta: metav1.ObjectMeta{Name: release, Namespace: ns, Labels: map[string]string{
			k0rdentv1beta1.StateManagementProviderAdapterLabel: k0rdentv1beta1.StateManagementProviderAdapterLabelValue,
		}, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: workspacesv1.GroupVersion.String(), Kind: "WorkspaceDeployment", Name: w.Name, UID: w.UID,
		}}},
		Spec: k0rdentv1beta1.ServiceSetSpec{
			Cluster:  "c1",
			Provider: k0rdentv1beta1.StateManagementProviderConfig{Name: k0rdentv1beta1.DefaultStateManagementProviderName},
			Services: []k0rdentv1beta1.ServiceWithValues{{
				Name: release, Namespace: "ws-" + name, Template: "tmpl", Values: valuesJSON,
				HelmOptions: &k0rdentv1beta1.ServiceHelmOptions{Wait: &wait, Timeout: &timeout},
			}},
		},
	}
	if err := operator().Create(ctx, ss); err != nil {
		t.Fatalf("creating the workspace's ServiceSet: %v", err)
	}
	deployed(t, ss)
	now := metav1.Now()
	w.Status = workspacesv1.WorkspaceDeploymentStatus{
		Phase: workspacesv1.PhaseRunning, Message: "Workspace is running", ObservedGeneration: w.Generation,
		ServiceEntryName: release,
		Conditions: []metav1.Condition{
			{Type: workspacesv1.ClassResolvedCondition, Status: metav1.ConditionTrue, Reason: workspacesv1.ClassResolvedReason, LastTransitionTime: now, ObservedGeneration: w.Generation},
			{Type: workspacesv1.ResourcesInjectedCondition, Status: metav1.ConditionTrue, Reason: workspacesv1.ResourcesInjectedReason, LastTransitionTime: now, ObservedGeneration: w.Generation},
			{Type: workspacesv1.HelmReleaseReadyCondition, Status: metav1.ConditionTrue, Reason: workspacesv1.HelmReleaseDeployedReason, LastTransitionTime: now, ObservedGeneration: w.Generation},
			{Type: "Ready", Status: metav1.ConditionTrue, Reason: workspacesv1.DeploymentReadyReason, Message: "Workspace is running", LastTransitionTime: now, ObservedGeneration: w.Generation},
		},
	}
	if err := operator().Status().Update(ctx, w); err != nil {
		t.Fatalf("writing the workspace status: %v", err)
	}
	return running{Workspace: w, ServiceSet: ss}
}

// deployed waits until the stand-in reports every service of a ServiceSet
// deployed, and refreshes it.
func deployed(t *testing.T, ss *k0rdentv1beta1.ServiceSet) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(ss), ss)).To(Succeed())
		g.Expect(ss.Status.Deployed).To(BeTrue())
	}, timeout, poll).Should(Succeed())
}

// operatorPrerequisite creates the shared prerequisite ServiceSet
// wsprereq-<cd>-<template> of a cluster as the operator does: its four
// labels, no owner, createNamespace, the namespace given, values from the
// class as JSON text ("" for none).
func operatorPrerequisite(t *testing.T, ns, template, namespace string) *k0rdentv1beta1.ServiceSet {
	t.Helper()
	name := "wsprereq-c1-" + template
	// Unstructured, because Apiary's ServiceSet type lacks installOptions.
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": k0rdentv1beta1.GroupVersion.String(), "kind": "ServiceSet",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{
			k0rdentv1beta1.StateManagementProviderAdapterLabel: k0rdentv1beta1.StateManagementProviderAdapterLabelValue,
			"workspaces.exalsius.ai/role":                      "prerequisite",
			"workspaces.exalsius.ai/cluster-deployment":        "c1",
			"workspaces.exalsius.ai/template":                  template,
		}},
		"spec": map[string]any{
			"cluster":  "c1",
			"provider": map[string]any{"name": k0rdentv1beta1.DefaultStateManagementProviderName},
			"services": []any{map[string]any{
				"name": template, "namespace": namespace, "template": template,
				"helmOptions": map[string]any{"wait": true, "timeout": "15m0s",
					"installOptions": map[string]any{"createNamespace": true}},
			}},
		},
	}}
	if err := operator().Create(context.Background(), u); err != nil {
		t.Fatalf("creating the prerequisite ServiceSet: %v", err)
	}
	ss := &k0rdentv1beta1.ServiceSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	deployed(t, ss)
	return ss
}

// operatorColony is a Colony with one cluster "a" as the operator leaves
// it: its finalizer, its ClusterDeployment <colony>-a created from the raw
// spec with the entry's labels and annotations and a controller reference
// to the Colony, later updated with a label of an earlier version of the
// entry (the operator merges labels additively, so it never removes one),
// and the aggregated Secret <colony>-kubeconfigs of ObjectReferences,
// without an owner.
type colony struct {
	Colony  *infrav1.Colony
	Cluster *k0rdentv1beta1.ClusterDeployment
	Secret  *corev1.Secret
}

func operatorColony(t *testing.T, ns, name string, entry infrav1.ColonyCluster, spec map[string]any, staleLabel string) colony {
	t.Helper()
	ctx := context.Background()
	entry.ClusterDeploymentSpec = &runtime.RawExtension{Raw: mustJSON(t, spec)}
	col := &infrav1.Colony{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: infrav1.ColonySpec{ColonyClusters: []infrav1.ColonyCluster{entry}}}
	if err := env.Client.Create(ctx, col); err != nil {
		t.Fatalf("creating Colony: %v", err)
	}
	col.Finalizers = []string{infrav1.ColonyFinalizer}
	if err := operator().Update(ctx, col); err != nil {
		t.Fatalf("adding the operator's finalizer: %v", err)
	}
	cdSpec := k0rdentv1beta1.ClusterDeploymentSpec{}
	if err := json.Unmarshal(mustJSON(t, spec), &cdSpec); err != nil {
		t.Fatal(err)
	}
	yes := true
	cd := &k0rdentv1beta1.ClusterDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-" + entry.ClusterName, Namespace: ns,
			Labels: copyMap(entry.ClusterLabels), Annotations: copyMap(entry.ClusterAnnotations),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: infrav1.GroupVersion.String(), Kind: "Colony",
				Name: col.Name, UID: col.UID, Controller: &yes, BlockOwnerDeletion: &yes}}},
		Spec: cdSpec,
	}
	if err := operator().Create(ctx, cd); err != nil {
		t.Fatalf("creating the ClusterDeployment: %v", err)
	}
	NewWithT(t).Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(cd), cd)).To(Succeed())
		cd.Labels[staleLabel] = "yes"
		g.Expect(operator().Update(ctx, cd)).To(Succeed())
	}, timeout, poll).Should(Succeed())
	ref := corev1.ObjectReference{APIVersion: "v1", Kind: "Secret", Namespace: ns, Name: cd.Name + "-kubeconfig"}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + "-kubeconfigs", Namespace: ns},
		Data: map[string][]byte{cd.Name: mustJSON(t, ref)}}
	if err := operator().Create(ctx, secret); err != nil {
		t.Fatalf("creating the aggregated Secret: %v", err)
	}
	col.Status = infrav1.ColonyStatus{Phase: infrav1.ColonyPhaseReady, TotalClusters: 1, ReadyClusters: 1,
		ClusterDeploymentRefs: []*corev1.ObjectReference{{APIVersion: k0rdentv1beta1.GroupVersion.String(),
			Kind: "ClusterDeployment", Namespace: ns, Name: cd.Name}}}
	if err := operator().Status().Update(ctx, col); err != nil {
		t.Fatalf("writing the Colony status: %v", err)
	}
	return colony{Colony: col, Cluster: cd, Secret: secret}
}

func copyMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
