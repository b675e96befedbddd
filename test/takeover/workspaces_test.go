package takeover_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/delivery"
	"github.com/apiaryhq/apiary/internal/delivery/canon"
	"github.com/apiaryhq/apiary/test/standin"
	"github.com/apiaryhq/apiary/test/world"
	"github.com/apiaryhq/apiary/test/world/builder"
)

// What Apiary renders for a workspace of the class below with the user
// value password=x, as the exalsius operator encodes it (json.Marshal of
// the merged values with the injected replicas).
const (
	renderedValues = `{"_exalsius":{"resources":{"replicas":1}},"image":"jupyter","password":"x"}`
	// rewordedValues means the same, written otherwise (key order, spaces).
	rewordedValues = `{ "password": "x", "image": "jupyter", "_exalsius": { "resources": { "replicas": 1 } } }`
	// staleValues is what the operator rendered before the class's
	// defaults changed; it never propagates such a change, Apiary does.
	staleValues = `{"_exalsius":{"resources":{"replicas":1}},"image":"jupyter-old","password":"x"}`
)

// TestRunningWorkspacesAreAdoptedInPlace: three workspaces the exalsius
// operator deployed are taken over by Apiary without their ServiceSets
// being deleted or re-created and without their releases being installed
// again; the two whose render means the same stay Running throughout and
// their ServiceSets are not written at all (adoption deferred until Apiary
// changes them). The one whose values Apiary renders differently is
// written once (Apiary's labels, annotation, field ownership and the new
// values) and upgraded once. A restart of Apiary writes nothing more.
// Deleting an adopted workspace, written or not, releases the operator's
// finalizer, and its ServiceSet and release go.
func TestRunningWorkspacesAreAdoptedInPlace(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "adopt-ws")
	builder.ReadyCluster(t, env.Client, ns, "c1")
	class := operatorClass(t, ns, "jupyter-"+ns, map[string]any{"image": "jupyter"})
	user := map[string]any{"password": "x"}
	ws := map[string]running{
		"same":     operatorWorkspace(t, ns, unique(ns, "same"), class.Name, renderedValues, user),
		"reworded": operatorWorkspace(t, ns, unique(ns, "reworded"), class.Name, rewordedValues, user),
		"stale":    operatorWorkspace(t, ns, unique(ns, "stale"), class.Name, staleValues, user),
	}
	uids := map[string]types.UID{}
	for name, r := range ws {
		uids[name] = r.ServiceSet.UID
		installs, upgrades := releaseCounts(ns, "ws-"+r.Workspace.Name, r.ServiceSet.Name)
		g.Expect([]int{installs, upgrades}).To(Equal([]int{1, 0}), "%s: the operator's install", name)
	}
	w := watchServiceSets(t, ns)
	phases := watchPhases(t, ns)

	m := apiary(t)
	for name, r := range ws {
		delivered(t, r.ServiceSet, r.Workspace)
		g.Eventually(func(g Gomega) {
			got := &workspacesv1.WorkspaceDeployment{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(r.Workspace), got)).To(Succeed())
			g.Expect(got.Status.Phase).To(Equal(workspacesv1.PhaseRunning), "%s: %s", name, got.Status.Message)
			g.Expect(got.Status.Delivery).NotTo(BeNil())
			g.Expect(got.Status.Delivery.Inventory.Entries).NotTo(BeEmpty(), "%s: Apiary delivered it", name)
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		}, timeout, poll).Should(Succeed())
	}
	adopted(t, ws["stale"].ServiceSet, ws["stale"].Workspace)
	// A restart reconciles everything again from an empty cache.
	m.Restart(func() {})
	time.Sleep(3 * time.Second)
	for name, r := range ws {
		running := world.EventuallyPhase(t, env.Client, r.Workspace, workspacesv1.PhaseRunning)
		g.Expect(running.Finalizers).To(ContainElement(workspacesv1.WorkspaceDeploymentFinalizer), name)
	}

	want := map[string][3]int{ // updates, spec changes, deletes
		"same": {0, 0, 0}, "reworded": {0, 0, 0}, "stale": {1, 1, 0},
	}
	for name, r := range ws {
		got := &k0rdentv1beta1.ServiceSet{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(r.ServiceSet), got)).To(Succeed())
		g.Expect(got.UID).To(Equal(uids[name]), "%s: the same ServiceSet", name)
		updates, specs, deletes := w.counts(got.Name)
		t.Logf("%s: %d updates, %d spec changes, %d deletes of ServiceSet %s", name, updates, specs, deletes, got.Name)
		g.Expect([3]int{updates, specs, deletes}).To(Equal(want[name]), name)
		installs, upgrades := releaseCounts(ns, "ws-"+r.Workspace.Name, got.Name)
		t.Logf("%s: release %s installed %d times, upgraded %d times", name, got.Name, installs, upgrades)
		g.Expect(installs).To(Equal(1), "%s: never installed again", name)
		g.Expect(upgrades).To(Equal(want[name][1]), "%s: upgraded only when its spec changed", name)
		g.Expect(got.OwnerReferences).To(ContainElement(HaveField("UID", r.Workspace.UID)), "the operator's owner reference stays")
		if name != "stale" {
			// Not written: the ServiceSet is as the operator left it. Its
			// field manager still owns the spec, and Apiary has no managed
			// fields, labels or annotations on it; the ownerReference ties
			// it to the workspace. Apiary's first change of it moves the
			// fields (TestAnAdoptedWorkspaceIsWrittenAtItsFirstChange).
			g.Expect(managerOwns(g, got, operatorFieldManager, metav1.ManagedFieldsOperationUpdate, "f:spec", "f:services")).To(BeTrue(),
				"%s: the operator's field manager still owns the spec", name)
			g.Expect(got.ManagedFields).NotTo(ContainElement(HaveField("Manager", delivery.DefaultFieldManager)), name)
			g.Expect(got.Labels).NotTo(HaveKey(delivery.LabelOwnerKind), name)
			g.Expect(got.Annotations).NotTo(HaveKey(delivery.AnnotationAppliedDigest), name)
			continue
		}
		g.Expect(managerOwns(g, got, operatorFieldManager, metav1.ManagedFieldsOperationUpdate, "f:spec")).To(BeFalse(),
			"%s: the operator's field manager owns none of the spec any more", name)
		g.Expect(managerOwns(g, got, delivery.DefaultFieldManager, metav1.ManagedFieldsOperationApply, "f:spec", "f:cluster")).To(BeTrue(), name)
	}
	g.Expect(phases.seen(ws["same"].Workspace.Name)).To(ConsistOf(workspacesv1.PhaseRunning), "adopting it never shows another phase")
	g.Expect(phases.seen(ws["reworded"].Workspace.Name)).To(ConsistOf(workspacesv1.PhaseRunning))
	t.Logf("stale: phases seen while adopted and upgraded: %v", phases.seen(ws["stale"].Workspace.Name))
	g.Expect(phases.seen(ws["stale"].Workspace.Name)).To(SatisfyAll(ContainElement(workspacesv1.PhaseRunning), Not(ContainElement(workspacesv1.PhaseFailed))))
	g.Expect(serviceSetValues(g, ns, ws["reworded"].ServiceSet.Name)).To(Equal(rewordedValues), "equivalent values are kept as written")
	g.Expect(serviceSetValues(g, ns, ws["stale"].ServiceSet.Name)).To(Equal(renderedValues), "the class's current defaults reach the stale one")

	// The operator's finalizer is released on delete, after the ServiceSet
	// and its release are gone: for the unwritten ServiceSets, which Apiary
	// deletes by their ownerReference, as for the written one.
	for _, name := range []string{"same", "reworded", "stale"} {
		gone(t, ws[name])
	}
}

// gone deletes an adopted workspace and checks that its ServiceSet and
// release went before its finalizers were released.
func gone(t *testing.T, r running) {
	t.Helper()
	g := NewWithT(t)
	ctx := context.Background()
	world.DeleteAndWait(t, env.Client, r.Workspace)
	g.Expect(apierrorsIsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(r.ServiceSet), &k0rdentv1beta1.ServiceSet{}))).To(BeTrue(),
		"workspace %s: its ServiceSet is deleted", r.Workspace.Name)
	g.Eventually(func() error {
		return child.Client.Get(ctx, client.ObjectKey{Namespace: "ws-" + r.Workspace.Name, Name: r.ServiceSet.Name + standin.InstalledConfigMapSuffix}, &corev1.ConfigMap{})
	}, timeout, poll).ShouldNot(Succeed(), "workspace %s: the release is uninstalled", r.Workspace.Name)
}

// TestAnAdoptedWorkspaceIsWrittenAtItsFirstChange: the ServiceSet of a
// workspace Apiary adopted without writing it is written once when the
// workspace's values change: the adopting Update sets the new values and
// Apiary's labels and annotations, and moves the operator's fields to
// Apiary's field manager; Sveltos upgrades the release once, in place.
func TestAnAdoptedWorkspaceIsWrittenAtItsFirstChange(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "adopt-change")
	builder.ReadyCluster(t, env.Client, ns, "c1")
	class := operatorClass(t, ns, "change-"+ns, map[string]any{"image": "jupyter"})
	r := operatorWorkspace(t, ns, unique(ns, "change"), class.Name, renderedValues, map[string]any{"password": "x"})
	w := watchServiceSets(t, ns)

	apiary(t)
	delivered(t, r.ServiceSet, r.Workspace)
	time.Sleep(2 * time.Second)
	updates, specs, deletes := w.counts(r.ServiceSet.Name)
	g.Expect([3]int{updates, specs, deletes}).To(Equal([3]int{0, 0, 0}), "adopted without a write")

	g.Eventually(func(g Gomega) {
		got := &workspacesv1.WorkspaceDeployment{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(r.Workspace), got)).To(Succeed())
		got.Spec.Values = &apiextensionsv1.JSON{Raw: mustJSON(t, map[string]any{"password": "y"})}
		g.Expect(env.Client.Update(ctx, got)).To(Succeed())
	}, timeout, poll).Should(Succeed())
	adopted(t, r.ServiceSet, r.Workspace)
	g.Eventually(func() int {
		_, upgrades := releaseCounts(ns, "ws-"+r.Workspace.Name, r.ServiceSet.Name)
		return upgrades
	}, timeout, poll).Should(Equal(1), "the release is upgraded")
	g.Eventually(func(g Gomega) {
		got := &workspacesv1.WorkspaceDeployment{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(r.Workspace), got)).To(Succeed())
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(got.Status.Phase).To(Equal(workspacesv1.PhaseRunning), got.Status.Message)
	}, timeout, poll).Should(Succeed())
	time.Sleep(2 * time.Second)

	updates, specs, deletes = w.counts(r.ServiceSet.Name)
	t.Logf("%d updates, %d spec changes, %d deletes of ServiceSet %s", updates, specs, deletes, r.ServiceSet.Name)
	g.Expect([3]int{updates, specs, deletes}).To(Equal([3]int{1, 1, 0}), "one write: the adopting Update with the new values")
	installs, upgrades := releaseCounts(ns, "ws-"+r.Workspace.Name, r.ServiceSet.Name)
	g.Expect([]int{installs, upgrades}).To(Equal([]int{1, 1}), "upgraded once, never installed again")
	got := &k0rdentv1beta1.ServiceSet{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(r.ServiceSet), got)).To(Succeed())
	g.Expect(got.UID).To(Equal(r.ServiceSet.UID), "the same ServiceSet")
	g.Expect(got.Spec.Services[0].Values).To(Equal(`{"_exalsius":{"resources":{"replicas":1}},"image":"jupyter","password":"y"}`))
	g.Expect(got.Labels).To(SatisfyAll(HaveKeyWithValue(delivery.LabelOwnerName, r.Workspace.Name),
		HaveKeyWithValue("workspaces.exalsius.ai/workspace", r.Workspace.Name)))
	g.Expect(got.Annotations).To(SatisfyAll(HaveKey(delivery.AnnotationAppliedDigest), HaveKeyWithValue(delivery.AnnotationAdopted, operatorFieldManager)))
	g.Expect(got.OwnerReferences).To(ContainElement(HaveField("UID", r.Workspace.UID)), "the operator's owner reference stays")
	g.Expect(managerOwns(g, got, operatorFieldManager, metav1.ManagedFieldsOperationUpdate, "f:spec")).To(BeFalse(),
		"the operator's field manager owns none of the spec any more")
	g.Expect(managerOwns(g, got, delivery.DefaultFieldManager, metav1.ManagedFieldsOperationApply, "f:spec", "f:cluster")).To(BeTrue())
	gone(t, r)
}

// TestOperatorPrerequisitesAreReused: a workspace whose class needs a
// prerequisite the exalsius operator installed on the cluster (its shared
// ServiceSet wsprereq-<cd>-<template>) is adopted with that ServiceSet: no
// second prerequisite ServiceSet, the same one (same UID) never written,
// its release installed once.
func TestOperatorPrerequisitesAreReused(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "adopt-prereq")
	builder.ReadyCluster(t, env.Client, ns, "c1")
	st := standin.NewHelmServiceTemplate(ns, "cert-manager-1-16", "cert-manager", "1.16.0",
		map[string]string{standin.AnnotationChart: standin.ChartPrerequisite})
	g.Expect(standin.CreateWithStatus(ctx, env.Client, st)).To(Succeed())
	prereq := operatorPrerequisite(t, ns, "cert-manager-1-16", ns)
	class := operatorClass(t, ns, "prereq-"+ns, map[string]any{"image": "jupyter"}, workspacesv1.PrerequisiteSpec{
		ServiceTemplate: workspacesv1.ServiceTemplateRef{Name: "cert-manager-1-16", Namespace: ns}, Namespace: ns,
	})
	r := operatorWorkspace(t, ns, unique(ns, "pre"), class.Name, renderedValues, map[string]any{"password": "x"})
	w := watchServiceSets(t, ns)

	apiary(t)
	delivered(t, r.ServiceSet, r.Workspace)
	time.Sleep(3 * time.Second)
	list := &k0rdentv1beta1.ServiceSetList{}
	g.Expect(env.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	var names []string
	for _, ss := range list.Items {
		names = append(names, ss.Name)
		if ss.Name == prereq.Name {
			g.Expect(ss.UID).To(Equal(prereq.UID), "the operator's prerequisite ServiceSet is kept")
		}
	}
	g.Expect(names).To(ConsistOf(prereq.Name, r.ServiceSet.Name), "no second prerequisite ServiceSet")
	updates, specs, deletes := w.counts(prereq.Name)
	t.Logf("prerequisite %s: %d updates, %d spec changes, %d deletes", prereq.Name, updates, specs, deletes)
	g.Expect([]int{updates, deletes}).To(Equal([]int{0, 0}), "the prerequisite is used as the operator left it")
	installs, upgrades := releaseCounts(ns, ns, "cert-manager-1-16")
	g.Expect([]int{installs, upgrades}).To(Equal([]int{1, 0}))
	got := world.EventuallyPhase(t, env.Client, r.Workspace, workspacesv1.PhaseRunning)
	g.Expect(got.Status.Prerequisites).NotTo(BeEmpty())
	world.DeleteAndWait(t, env.Client, r.Workspace)
}

// delivered waits until Apiary delivered a workspace's ServiceSet: the
// workspace's inventory lists it, whether Apiary wrote it or left it as the
// operator wrote it.
func delivered(t *testing.T, ss *k0rdentv1beta1.ServiceSet, w *workspacesv1.WorkspaceDeployment) {
	t.Helper()
	id := canon.ObjectID{Namespace: ss.Namespace, Name: ss.Name, Group: k0rdentv1beta1.GroupVersion.Group, Kind: "ServiceSet"}.String()
	NewWithT(t).Eventually(func(g Gomega) {
		ws := &workspacesv1.WorkspaceDeployment{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(w), ws)).To(Succeed())
		g.Expect(ws.Status.Delivery).NotTo(BeNil(), "workspace %s: %s %s", w.Name, ws.Status.Phase, ws.Status.Message)
		g.Expect(ws.Status.Delivery.Inventory).NotTo(BeNil())
		g.Expect(ws.Status.Delivery.Inventory.Entries).To(ContainElement(HaveField("ID", id)), "workspace %s: %s", w.Name, ws.Status.Message)
	}, timeout, poll).Should(Succeed())
}

// adopted waits until Apiary wrote a ServiceSet (it carries Apiary's
// applied digest).
func adopted(t *testing.T, ss *k0rdentv1beta1.ServiceSet, w *workspacesv1.WorkspaceDeployment) {
	t.Helper()
	NewWithT(t).Eventually(func(g Gomega) {
		got := &k0rdentv1beta1.ServiceSet{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(ss), got)).To(Succeed())
		ws := &workspacesv1.WorkspaceDeployment{}
		g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(w), ws)).To(Succeed())
		g.Expect(got.Annotations).To(HaveKey(delivery.AnnotationAppliedDigest), "workspace %s: %s %s", w.Name, ws.Status.Phase, ws.Status.Message)
	}, timeout, poll).Should(Succeed())
}

func serviceSetValues(g Gomega, ns, name string) string {
	ss := &k0rdentv1beta1.ServiceSet{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, ss)).To(Succeed())
	g.Expect(ss.Spec.Services).To(HaveLen(1))
	return ss.Spec.Services[0].Values
}

// phaseLog records the distinct phases each workspace of a namespace shows
// from now on.
type phaseLog struct {
	mu     sync.Mutex
	phases map[string][]workspacesv1.WorkspacePhase
}

func (l *phaseLog) seen(name string) []workspacesv1.WorkspacePhase {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]workspacesv1.WorkspacePhase(nil), l.phases[name]...)
}

func watchPhases(t *testing.T, ns string) *phaseLog {
	t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	watcher, err := wc.Watch(context.Background(), &workspacesv1.WorkspaceDeploymentList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(watcher.Stop)
	l := &phaseLog{phases: map[string][]workspacesv1.WorkspacePhase{}}
	go func() {
		for ev := range watcher.ResultChan() {
			w, ok := ev.Object.(*workspacesv1.WorkspaceDeployment)
			if !ok || w.DeletionTimestamp != nil {
				continue
			}
			l.mu.Lock()
			if !slices.Contains(l.phases[w.Name], w.Status.Phase) {
				l.phases[w.Name] = append(l.phases[w.Name], w.Status.Phase)
			}
			l.mu.Unlock()
		}
	}()
	return l
}

// unique names a workspace after the random suffix of its test's namespace,
// as its child namespace ws-<name> is on the child cluster all tests share
// (envtest never finishes deleting a namespace).
func unique(ns, name string) string { return name + ns[strings.LastIndex(ns, "-"):] }
