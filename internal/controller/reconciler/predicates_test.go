package reconciler

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

func TestPredicates(t *testing.T) {
	a := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"x": "1"}}}
	b := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{"x": "2"}}}
	labelChanged := func(old, updated client.Object) bool { return old.GetLabels()["x"] != updated.GetLabels()["x"] }
	type passes struct{ create, updateChanged, updateSame, del, generic bool }
	cases := []struct {
		name string
		p    predicate.Predicate
		want passes
	}{
		{"Deleted", Deleted(), passes{del: true}},
		{"Created", Created(), passes{create: true, generic: true}},
		{"UpdatedWhen", UpdatedWhen(labelChanged), passes{updateChanged: true}},
		{"UpdatesWhen", UpdatesWhen(labelChanged), passes{create: true, updateChanged: true, del: true, generic: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(tc.p.Create(event.CreateEvent{Object: a})).To(Equal(tc.want.create), "create")
			g.Expect(tc.p.Update(event.UpdateEvent{ObjectOld: a, ObjectNew: b})).To(Equal(tc.want.updateChanged), "update that changes")
			g.Expect(tc.p.Update(event.UpdateEvent{ObjectOld: a, ObjectNew: a})).To(Equal(tc.want.updateSame), "update that does not")
			g.Expect(tc.p.Delete(event.DeleteEvent{Object: a})).To(Equal(tc.want.del), "delete")
			g.Expect(tc.p.Generic(event.GenericEvent{Object: a})).To(Equal(tc.want.generic), "generic")
		})
	}
}
