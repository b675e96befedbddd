package manager

import (
	"context"
	"testing"

	"github.com/go-logr/logr"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	corev1 "k8s.io/api/core/v1"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	apiaryscheme "github.com/apiaryhq/apiary/internal/scheme"
)

func wsd(name, lifetime string) unstructured.Unstructured {
	u := unstructured.Unstructured{Object: map[string]any{
		"apiVersion": workspacesv1.GroupVersion.String(), "kind": "WorkspaceDeployment",
		"metadata": map[string]any{"name": name, "namespace": "t", "uid": name + "-uid", "resourceVersion": "7"},
		"spec":     map[string]any{"workspaceClassRef": "c", "lifecycle": map[string]any{"lifetime": lifetime}},
	}}
	return u
}

// TestQuarantineKeepsOthersDecoded: a list with one undecodable item is
// the list of the others; an undecodable watch event is dropped, but for
// a deletion, which reaches the cache with the object's metadata.
func TestQuarantineKeepsOthersDecoded(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	q := newQuarantine(&rest.Config{}, apiaryscheme.New(), logr.Discard())
	gvk := workspacesv1.GroupVersion.WithKind("WorkspaceDeployment")

	gvkOK, ok := q.kindOf(&workspacesv1.WorkspaceDeployment{})
	g.Expect(ok).To(BeTrue())
	g.Expect(gvkOK).To(Equal(gvk))
	_, ok = q.kindOf(&corev1.Secret{})
	g.Expect(ok).To(BeFalse(), "other kinds keep controller-runtime's informer")
	_, ok = q.kindOf(&metav1.PartialObjectMetadata{})
	g.Expect(ok).To(BeFalse())

	ul := &unstructured.UnstructuredList{Items: []unstructured.Unstructured{wsd("good", "1h"), wsd("bad", "banana"), wsd("other", "30m")}}
	ul.SetResourceVersion("42")
	obj, err := q.typedList(ctx, gvk, ul)
	g.Expect(err).NotTo(HaveOccurred())
	list, ok := obj.(*workspacesv1.WorkspaceDeploymentList)
	g.Expect(ok).To(BeTrue(), "%T", obj)
	g.Expect(list.ResourceVersion).To(Equal("42"))
	g.Expect(list.Items).To(HaveLen(2))
	g.Expect(list.Items[0].Name).To(Equal("good"))
	g.Expect(list.Items[0].Spec.Lifecycle.Lifetime.Duration.String()).To(Equal("1h0m0s"))
	g.Expect(list.Items[1].Name).To(Equal("other"))

	bad := wsd("bad", "banana")
	_, pass := q.typedEvent(ctx, gvk, watch.Event{Type: watch.Added, Object: &bad})
	g.Expect(pass).To(BeFalse(), "an undecodable object is kept out of the cache")
	_, pass = q.typedEvent(ctx, gvk, watch.Event{Type: watch.Modified, Object: &bad})
	g.Expect(pass).To(BeFalse())
	e, pass := q.typedEvent(ctx, gvk, watch.Event{Type: watch.Deleted, Object: &bad})
	g.Expect(pass).To(BeTrue(), "its deletion reaches the cache")
	gone, ok := e.Object.(*workspacesv1.WorkspaceDeployment)
	g.Expect(ok).To(BeTrue(), "%T", e.Object)
	g.Expect(gone.Namespace + "/" + gone.Name).To(Equal("t/bad"))
	good := wsd("good", "2h")
	e, pass = q.typedEvent(ctx, gvk, watch.Event{Type: watch.Modified, Object: &good})
	g.Expect(pass).To(BeTrue())
	g.Expect(e.Object.(*workspacesv1.WorkspaceDeployment).Spec.Lifecycle.Lifetime.Hours()).To(Equal(2.0))
	status := &unstructured.Unstructured{Object: map[string]any{"kind": "Status", "apiVersion": "v1", "code": int64(410)}}
	e, pass = q.typedEvent(ctx, gvk, watch.Event{Type: watch.Error, Object: status})
	g.Expect(pass).To(BeTrue(), "errors reach the reflector as they are")
	g.Expect(e.Object).To(BeIdenticalTo(status))
}
