package childns

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
	"github.com/apiaryhq/apiary/internal/workspace/plan"
)

// TestNotOurs: only a namespace marked as this workspace's is adopted.
func TestNotOurs(t *testing.T) {
	w := &workspacesv1.WorkspaceDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "nb"}}
	ns := func(labels map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ws-nb", Labels: labels}}
	}
	cases := []struct {
		name   string
		labels map[string]string
		want   string // a substring of the refusal, "" for adopted
	}{
		{"Apiary's", map[string]string{plan.WorkspaceLabel: "nb", plan.WorkspaceOwnerNamespaceLabel: "team"}, ""},
		{"the exalsius operator's", map[string]string{plan.WorkspaceLabel: "nb", "istio.io/dataplane-mode": "ambient"}, ""},
		{"unmarked", nil, "without the label"},
		{"unmarked with other labels", map[string]string{"team": "x"}, "without the label"},
		{"another workspace's mark", map[string]string{plan.WorkspaceLabel: "other"}, `belongs to workspace "other"`},
		{"a workspace of another namespace", map[string]string{plan.WorkspaceLabel: "nb", plan.WorkspaceOwnerNamespaceLabel: "rival"}, `in namespace "rival"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := notOurs(ns(tc.labels), w)
			if tc.want == "" {
				NewWithT(t).Expect(got).To(BeEmpty())
				return
			}
			NewWithT(t).Expect(got).To(ContainSubstring(tc.want))
		})
	}
}

// TestForeign: a child-side action acts only on a namespace marked with
// the workspace's name and namespace; the exalsius operator's, which names
// no namespace, is left for the caller to decide by the ServiceSet.
func TestForeign(t *testing.T) {
	g := NewWithT(t)
	w := &workspacesv1.WorkspaceDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "nb"}}
	ns := func(labels map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ws-nb", Labels: labels}}
	}
	why, unnamed := Foreign(ns(map[string]string{plan.WorkspaceLabel: "nb", plan.WorkspaceOwnerNamespaceLabel: "team"}), w)
	g.Expect(why).To(BeEmpty())
	g.Expect(unnamed).To(BeFalse())
	why, unnamed = Foreign(ns(map[string]string{plan.WorkspaceLabel: "nb"}), w)
	g.Expect(why).To(BeEmpty())
	g.Expect(unnamed).To(BeTrue())
	why, _ = Foreign(ns(map[string]string{plan.WorkspaceLabel: "nb", plan.WorkspaceOwnerNamespaceLabel: "victim"}), w)
	g.Expect(why).To(ContainSubstring(`in namespace "victim"`))
	why, _ = Foreign(ns(nil), w)
	g.Expect(why).To(ContainSubstring("without the label"))
}
