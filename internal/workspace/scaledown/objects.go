package scaledown

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	// helmReleaseName and helmReleaseNamespace are the annotations Helm 3
	// puts on every object it creates.
	helmReleaseName      = "meta.helm.sh/release-name"
	helmReleaseNamespace = "meta.helm.sh/release-namespace"

	// ListLimit bounds the objects of one kind read from one namespace.
	ListLimit = 500
)

// kind is a workload controller kind Stop and Start handle.
type kind struct {
	gvk schema.GroupVersionKind
	// optional kinds are skipped quietly when the child does not serve them.
	optional bool
	// suspend kinds stop through spec.suspend rather than spec.replicas.
	suspend bool
}

// kinds are the controllers of a release that run pods.
var kinds = []kind{
	{gvk: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}},
	{gvk: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}},
	{gvk: schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"}},
	{gvk: schema.GroupVersionKind{Group: "leaderworkerset.x-k8s.io", Version: "v1", Kind: "LeaderWorkerSet"}, optional: true},
	{gvk: schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "CronJob"}, suspend: true},
}

// object is one controller of a release.
type object struct {
	kind kind
	u    *unstructured.Unstructured
}

func (o object) String() string { return o.kind.gvk.Kind + "/" + o.u.GetName() }

// saveKey is the annotation that marks o stopped and holds what Stop saved.
func (o object) saveKey() string {
	if o.kind.suspend {
		return SuspendAnnotation
	}
	return ReplicasAnnotation
}

// saved returns the annotation Stop left on o, if any.
func (o object) saved() (string, bool) {
	v, ok := o.u.GetAnnotations()[o.saveKey()]
	return v, ok
}

// replicas is spec.replicas, 1 when unset as the API's default is.
func (o object) replicas() int64 {
	v, found, _ := unstructured.NestedFieldNoCopy(o.u.Object, "spec", "replicas")
	if !found || v == nil {
		return 1
	}
	switch n := v.(type) {
	case int64:
		return n
	case float64:
		return int64(n)
	}
	return 1
}

// suspended is a CronJob's spec.suspend.
func (o object) suspended() bool {
	v, _, _ := unstructured.NestedBool(o.u.Object, "spec", "suspend")
	return v
}

// running reports whether o may still create pods.
func (o object) running() bool {
	if o.kind.suspend {
		return !o.suspended()
	}
	return o.replicas() > 0
}

// inRelease reports whether Helm created m for release in namespace.
func inRelease(m metav1.Object, namespace, release string) bool {
	a := m.GetAnnotations()
	if a[helmReleaseName] != release {
		return false
	}
	ns, ok := a[helmReleaseNamespace]
	return !ok || ns == namespace
}

// controlled reports whether another object controls m (a Deployment its
// ReplicaSets); its controller, not Stop, decides its replicas.
func controlled(m metav1.Object) bool {
	return metav1.GetControllerOfNoCopy(m) != nil
}

// list reads one kind's objects in namespace, at most limit of them. An
// optional kind the child does not serve yields nothing.
func list(ctx context.Context, c client.Client, k kind, namespace string, limit int64) ([]unstructured.Unstructured, error) {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(k.gvk.GroupVersion().WithKind(k.gvk.Kind + "List"))
	err := c.List(ctx, l, client.InNamespace(namespace), client.Limit(limit))
	if k.optional && (meta.IsNoMatchError(err) || apierrors.IsNotFound(err)) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing %s in namespace %s: %w", k.gvk.Kind, namespace, err)
	}
	if l.GetContinue() != "" {
		return nil, fmt.Errorf("namespace %s holds more than %d %s objects; refusing to read them all", namespace, limit, k.gvk.Kind)
	}
	return l.Items, nil
}

// releaseObjects returns the controllers of release in namespace that no
// other object controls, kind by kind.
func (r runner) releaseObjects(ctx context.Context, c client.Client, namespace, release string) ([]object, error) {
	var out []object
	for _, k := range r.kinds {
		items, err := list(ctx, c, k, namespace, r.limit)
		if err != nil {
			return nil, err
		}
		for i := range items {
			u := &items[i]
			if inRelease(u, namespace, release) && !controlled(u) {
				out = append(out, object{kind: k, u: u})
			}
		}
	}
	return out, nil
}
