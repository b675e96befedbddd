package scaledown

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/apiaryhq/apiary/internal/testenv"
	"github.com/apiaryhq/apiary/test/world"
)

// child stands for a child cluster: no Apiary CRDs, a minimal
// LeaderWorkerSet CRD, and no controller-manager (so no pods appear).
var child *testenv.Environment

func TestMain(m *testing.M) {
	// Fuzz targets need no control plane.
	world.Main(m, world.World{Name: "scaledown", Child: true, Bare: world.Fuzzing,
		ChildOptions: []testenv.Option{testenv.WithCRDDirs("internal/workspace/scaledown/testdata/crds")}},
		func(r *world.Running) error { child = r.Child; return nil })
}

// namespace is a fresh namespace for one test.
func namespace(t *testing.T) string {
	t.Helper()
	if child == nil {
		t.Skip("no control plane while fuzzing")
	}
	return child.NewNamespace(t, "ws")
}

// helm returns the metadata Helm gives an object of release in ns.
func helm(ns, name, release string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, Annotations: map[string]string{
		helmReleaseName: release, helmReleaseNamespace: ns,
	}}
}

var podTemplate = corev1.PodTemplateSpec{
	ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}},
	Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyAlways,
		Containers:    []corev1.Container{{Name: "c", Image: "busybox"}},
	},
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := child.Client.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

func deployment(t *testing.T, ns, name, release string, replicas int32) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: helm(ns, name, release), Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To(replicas), Template: podTemplate,
		Selector: &metav1.LabelSelector{MatchLabels: podTemplate.Labels},
	}}
	create(t, d)
	return d
}

func statefulSet(t *testing.T, ns, name, release string, replicas int32) *appsv1.StatefulSet {
	s := &appsv1.StatefulSet{ObjectMeta: helm(ns, name, release), Spec: appsv1.StatefulSetSpec{
		Replicas: ptr.To(replicas), Template: podTemplate, ServiceName: name,
		Selector: &metav1.LabelSelector{MatchLabels: podTemplate.Labels},
	}}
	create(t, s)
	return s
}

func replicaSet(t *testing.T, ns, name, release string, replicas int32, owner *metav1.OwnerReference) *appsv1.ReplicaSet {
	meta := helm(ns, name, release)
	if owner != nil {
		meta.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	r := &appsv1.ReplicaSet{ObjectMeta: meta, Spec: appsv1.ReplicaSetSpec{
		Replicas: ptr.To(replicas), Template: podTemplate,
		Selector: &metav1.LabelSelector{MatchLabels: podTemplate.Labels},
	}}
	create(t, r)
	return r
}

func cronJob(t *testing.T, ns, name, release string, suspend bool) *batchv1.CronJob {
	tmpl := podTemplate
	tmpl.Spec.RestartPolicy = corev1.RestartPolicyNever
	cj := &batchv1.CronJob{ObjectMeta: helm(ns, name, release), Spec: batchv1.CronJobSpec{
		Schedule: "*/5 * * * *", Suspend: ptr.To(suspend),
		JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: tmpl}},
	}}
	create(t, cj)
	return cj
}

func leaderWorkerSet(t *testing.T, ns, name, release string, replicas int64) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
		"metadata": map[string]any{"namespace": ns, "name": name, "annotations": map[string]any{
			helmReleaseName: release, helmReleaseNamespace: ns,
		}},
		"spec": map[string]any{"replicas": replicas, "leaderWorkerTemplate": map[string]any{"size": int64(2)}},
	}}
	create(t, u)
	return u
}

// state reads obj again and returns its replicas (or, for a CronJob, 1
// when running and 0 when suspended) and its annotations.
func state(t *testing.T, obj client.Object) (int64, map[string]string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvkOf(t, obj))
	if err := child.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), u); err != nil {
		t.Fatalf("reading %s: %v", obj.GetName(), err)
	}
	if u.GetKind() == "CronJob" {
		s, _, _ := unstructured.NestedBool(u.Object, "spec", "suspend")
		if s {
			return 0, u.GetAnnotations()
		}
		return 1, u.GetAnnotations()
	}
	return object{u: u}.replicas(), u.GetAnnotations()
}

func gvkOf(t *testing.T, obj client.Object) schema.GroupVersionKind {
	t.Helper()
	gvk, err := child.Client.GroupVersionKindFor(obj)
	if err != nil {
		t.Fatalf("kind of %T: %v", obj, err)
	}
	return gvk
}

// podFrom is a Pod of a template, owned as the template says.
func podFrom(tmpl *corev1.PodTemplateSpec) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
}
