package delivery

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestOwnerLabels(t *testing.T) {
	g := NewWithT(t)
	o := Owner{Kind: "WorkspaceDeployment", Namespace: "team", Name: strings.Repeat("w", 100)}
	labels := o.OwnerLabels()
	g.Expect(labels).To(HaveKeyWithValue(LabelOwnerKind, "WorkspaceDeployment"))
	g.Expect(labels).To(HaveKeyWithValue(LabelOwnerNamespace, "team"))
	g.Expect(len(labels[LabelOwnerName])).To(BeNumerically("<=", 63))
	g.Expect(o.Owns(labels)).To(BeTrue())
	other := Owner{Kind: "WorkspaceDeployment", Namespace: "team", Name: strings.Repeat("w", 101)}
	g.Expect(other.Owns(labels)).To(BeFalse())
	g.Expect(other.heldByOther(labels)).To(ContainSubstring("WorkspaceDeployment team/"))
	g.Expect(o.heldByOther(labels)).To(BeEmpty())
	g.Expect(o.heldByOther(map[string]string{"app": "x"})).To(BeEmpty(), "unlabelled objects are held by no one")
}

// TestReferencedByOther: an object without Apiary's owner labels whose
// ownerReference names another object of the owner's kind (the exalsius
// operator's ServiceSet of another workspace of a colliding name) is held
// by that one; one naming the owner, or no object of its kind, is not.
func TestReferencedByOther(t *testing.T) {
	g := NewWithT(t)
	owner := Owner{Kind: "WorkspaceDeployment", Namespace: "a", Name: "b-c", UID: "mine"}
	obj := func(labels map[string]string, refs ...metav1.OwnerReference) *metav1.ObjectMeta {
		return &metav1.ObjectMeta{Labels: labels, OwnerReferences: refs}
	}
	ref := func(kind, uid string) metav1.OwnerReference {
		return metav1.OwnerReference{Kind: kind, Name: "c", UID: types.UID(uid)}
	}
	g.Expect(owner.referencedByOther(obj(nil, ref("WorkspaceDeployment", "theirs")))).To(ContainSubstring("uid theirs"))
	g.Expect(owner.referencedByOther(obj(nil, ref("WorkspaceDeployment", "theirs"), ref("WorkspaceDeployment", "mine")))).To(BeEmpty())
	g.Expect(owner.referencedByOther(obj(nil, ref("ClusterDeployment", "cd")))).To(BeEmpty())
	g.Expect(owner.referencedByOther(obj(owner.OwnerLabels(), ref("WorkspaceDeployment", "theirs")))).To(BeEmpty(), "labels decide")
	g.Expect(Owner{Kind: "WorkspaceDeployment", Name: "x"}.referencedByOther(obj(nil, ref("WorkspaceDeployment", "theirs")))).To(BeEmpty(), "no UID, no verdict")
	g.Expect(owner.Holds(obj(nil, ref("WorkspaceDeployment", "mine")))).To(BeTrue())
	g.Expect(owner.Holds(obj(nil, ref("WorkspaceDeployment", "theirs")))).To(BeFalse())
}
