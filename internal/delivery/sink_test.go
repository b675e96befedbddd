package delivery

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
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
