package gitops_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	commonv1 "github.com/apiaryhq/apiary/api/common/v1"
	k0rdentv1beta1 "github.com/apiaryhq/apiary/api/k0rdent/v1beta1"
	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/workspace/scaledown"
	"github.com/apiaryhq/apiary/test/standin"
	"github.com/apiaryhq/apiary/test/world/builder"
)

// TestWorkspaceStopStartThroughGit stops and starts a workspace of a
// hub-shaped chart in Git mode. Stopping commits its ServiceSet with
// k0rdent's pause and scales nothing until Flux applied that commit (Flux
// is held meanwhile: the workspace reads as stopping); then the Deployment
// goes to zero, its volume claim stays, and the workspace is Stopped and
// Ready. Starting commits the ServiceSet without the pause and scales the
// Deployment back. Deleting it while stopped lifts the live pause, so that
// Flux's prune of the removed file uninstalls the release.
func TestWorkspaceStopStartThroughGit(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := env.NewNamespace(t, "gitops-stop")
	// The child namespace ws-<name> outlives the test (envtest never
	// finishes deleting namespaces): the name is the test namespace's.
	name := "hub-" + ns[len(ns)-5:]
	k0rdentFixtures(t, ns)
	tmpl := standin.NewServiceTemplate(ns, "hub", true, map[string]string{standin.AnnotationChart: standin.ChartWorkspaceHub})
	g.Expect(standin.CreateWithStatus(ctx, env.Client, tmpl)).To(Succeed())
	readyCluster(t, ns, "c1", nil, nil)
	class := &workspacesv1.WorkspaceClass{ObjectMeta: metav1.ObjectMeta{Name: "hub-" + ns}, Spec: workspacesv1.WorkspaceClassSpec{
		DisplayName: "hub", ServiceTemplate: workspacesv1.ServiceTemplateRef{Name: tmpl.Name, Namespace: ns}}}
	g.Expect(env.Client.Create(ctx, class)).To(Succeed())
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), class) })
	w := builder.Workspace(ns, name, class.Name, "c1")
	g.Expect(env.Client.Create(ctx, w)).To(Succeed())
	w = eventuallyTrue(t, w, commonv1.SyncedCondition, commonv1.ReadyCondition)
	g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseRunning))
	g.Expect(w.Status.Admission).NotTo(BeNil())
	ssKey := client.ObjectKey{Namespace: ns, Name: "wsd-c1-" + name}
	file := objectFile(ns, "serviceset", ssKey.Name)
	rel := hubReleaseOf(name, "wsd-c1-"+name)
	var pvcUID types.UID
	g.Eventually(func(g Gomega) {
		d, pvc := rel.read(g)
		g.Expect(*d.Spec.Replicas).To(BeEquivalentTo(1))
		pvcUID = pvc.UID
	}, timeout, 200*time.Millisecond).Should(Succeed())
	g.Expect(committedAnnotations(t, file)).NotTo(HaveKey(k0rdentv1beta1.ServiceSetPausedAnnotation))

	// Stop, with Flux held: the pause is committed, not applied, and
	// nothing is scaled yet.
	holdFlux(t, true)
	setStoppedThroughAPI(t, w, true)
	g.Eventually(func(g Gomega) {
		g.Expect(committedAnnotations(t, file)).To(HaveKeyWithValue(k0rdentv1beta1.ServiceSetPausedAnnotation, "true"))
	}, timeout, 200*time.Millisecond).Should(Succeed())
	g.Consistently(func(g Gomega) {
		cur := &workspacesv1.WorkspaceDeployment{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(w), cur)).To(Succeed())
		g.Expect(cur.Status.Phase).To(Equal(workspacesv1.PhaseStopped), "stopping: %s", cur.Status.Message)
		g.Expect(apimeta.FindStatusCondition(cur.Status.Conditions, commonv1.ReconcilingCondition)).To(
			HaveField("Reason", workspacesv1.StoppingReason))
		d, _ := rel.read(g)
		g.Expect(*d.Spec.Replicas).To(BeEquivalentTo(1), "nothing is scaled before Flux applied the pause")
	}, time.Second, 200*time.Millisecond).Should(Succeed())
	holdFlux(t, false)
	w = eventuallyStoppedThroughGit(t, w)
	g.Expect(w.Status.Admission).To(BeNil(), "the admission is given back")
	g.Expect(liveServiceSet(g, ssKey).Annotations).To(HaveKeyWithValue(k0rdentv1beta1.ServiceSetPausedAnnotation, "true"))
	g.Eventually(func(g Gomega) {
		d, pvc := rel.read(g)
		g.Expect(*d.Spec.Replicas).To(BeZero())
		g.Expect(d.Annotations).To(HaveKeyWithValue(scaledown.ReplicasAnnotation, "1"))
		g.Expect(pvc.UID).To(Equal(pvcUID), "the volume claim is kept")
	}, timeout, 200*time.Millisecond).Should(Succeed())

	// Start: the pause leaves Git and the cluster; the Deployment is back.
	setStoppedThroughAPI(t, w, false)
	w = eventuallyReason(t, w, commonv1.ReadyCondition, workspacesv1.DeploymentReadyReason)
	g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseRunning))
	g.Expect(w.Status.Lifecycle.StoppedAt).To(BeNil())
	g.Expect(committedAnnotations(t, file)).NotTo(HaveKey(k0rdentv1beta1.ServiceSetPausedAnnotation))
	g.Eventually(func(g Gomega) {
		g.Expect(liveServiceSet(g, ssKey).Annotations).NotTo(HaveKey(k0rdentv1beta1.ServiceSetPausedAnnotation))
		d, pvc := rel.read(g)
		g.Expect(*d.Spec.Replicas).To(BeEquivalentTo(1))
		g.Expect(d.Annotations).NotTo(HaveKey(scaledown.ReplicasAnnotation))
		g.Expect(pvc.UID).To(Equal(pvcUID), "the same volume claim")
	}, timeout, 200*time.Millisecond).Should(Succeed())

	// Deleted while stopped: the file goes, the pause is lifted, and Flux's
	// prune uninstalls the release.
	setStoppedThroughAPI(t, w, true)
	w = eventuallyStoppedThroughGit(t, w)
	g.Expect(liveServiceSet(g, ssKey).Annotations).To(HaveKey(k0rdentv1beta1.ServiceSetPausedAnnotation))
	g.Expect(env.Client.Delete(ctx, w)).To(Succeed())
	eventuallyGone(t, w)
	g.Expect(headFile(t, file)).To(BeEmpty())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, ssKey, &k0rdentv1beta1.ServiceSet{}))
	}, timeout, 200*time.Millisecond).Should(BeTrue(), "Flux pruned the ServiceSet and kcm let it go")
	g.Eventually(func() bool {
		pvc := &corev1.PersistentVolumeClaim{}
		err := child.Client.Get(ctx, rel.key, pvc)
		// envtest runs no controller that lifts pvc-protection.
		return apierrors.IsNotFound(err) || err == nil && !pvc.DeletionTimestamp.IsZero()
	}, timeout, 200*time.Millisecond).Should(BeTrue(), "the uninstall deletes the volume claim")
}

// hubRelease names what the hub-shaped chart installs on the child: a
// Deployment and a volume claim named after the release.
type hubRelease struct{ key client.ObjectKey }

func hubReleaseOf(workspace, release string) hubRelease {
	return hubRelease{key: client.ObjectKey{Namespace: "ws-" + workspace, Name: release}}
}

func (h hubRelease) read(g Gomega) (*appsv1.Deployment, *corev1.PersistentVolumeClaim) {
	d, pvc := &appsv1.Deployment{}, &corev1.PersistentVolumeClaim{}
	g.Expect(child.Client.Get(context.Background(), h.key, d)).To(Succeed())
	g.Expect(child.Client.Get(context.Background(), h.key, pvc)).To(Succeed())
	return d, pvc
}

// committedAnnotations reads the annotations of the object a file at the
// branch head holds; the file must exist.
func committedAnnotations(t *testing.T, path string) map[string]string {
	t.Helper()
	data := headFile(t, path)
	NewWithT(t).Expect(data).NotTo(BeEmpty(), "%s at the head", path)
	u := &unstructured.Unstructured{}
	NewWithT(t).Expect(yaml.Unmarshal([]byte(data), &u.Object)).To(Succeed())
	return u.GetAnnotations()
}

func liveServiceSet(g Gomega, key client.ObjectKey) *k0rdentv1beta1.ServiceSet {
	ss := &k0rdentv1beta1.ServiceSet{}
	g.Expect(env.Client.Get(context.Background(), key, ss)).To(Succeed())
	return ss
}

// setStoppedThroughAPI sets spec.lifecycle.stopped, as a user would.
func setStoppedThroughAPI(t *testing.T, w *workspacesv1.WorkspaceDeployment, stopped bool) {
	t.Helper()
	NewWithT(t).Eventually(func() error {
		cur := &workspacesv1.WorkspaceDeployment{}
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(w), cur); err != nil {
			return err
		}
		if cur.Spec.Lifecycle == nil {
			cur.Spec.Lifecycle = &workspacesv1.WorkspaceLifecycle{}
		}
		cur.Spec.Lifecycle.Stopped = stopped
		return env.Client.Update(context.Background(), cur)
	}, timeout, 100*time.Millisecond).Should(Succeed())
}

// eventuallyStoppedThroughGit waits until the workspace finished stopping:
// phase Stopped, Ready True with reason Stopped, nothing in progress.
func eventuallyStoppedThroughGit(t *testing.T, w *workspacesv1.WorkspaceDeployment) *workspacesv1.WorkspaceDeployment {
	t.Helper()
	w = eventuallyReason(t, w, commonv1.ReadyCondition, workspacesv1.StoppedReason)
	g := NewWithT(t)
	g.Expect(w.Status.Phase).To(Equal(workspacesv1.PhaseStopped))
	g.Expect(apimeta.IsStatusConditionTrue(w.Status.Conditions, commonv1.ReadyCondition)).To(BeTrue())
	g.Expect(apimeta.FindStatusCondition(w.Status.Conditions, commonv1.ReconcilingCondition)).To(BeNil())
	g.Expect(w.Status.Lifecycle.StoppedAt).NotTo(BeNil())
	return w
}

// holdFlux suspends the Kustomization that applies Apiary's folder, or
// lets it apply again; the test lets it go in any case.
func holdFlux(t *testing.T, hold bool) {
	t.Helper()
	ks := &unstructured.Unstructured{}
	ks.SetAPIVersion("kustomize.toolkit.fluxcd.io/v1")
	ks.SetKind("Kustomization")
	ks.SetNamespace(fluxNS)
	ks.SetName(fluxName)
	patch := func(suspend bool) error {
		body := []byte(`{"spec":{"suspend":false}}`)
		if suspend {
			body = []byte(`{"spec":{"suspend":true}}`)
		}
		return env.Client.Patch(context.Background(), ks, client.RawPatch(types.MergePatchType, body))
	}
	NewWithT(t).Expect(patch(hold)).To(Succeed())
	if hold {
		t.Cleanup(func() { _ = patch(false) })
	}
}
