package reconciler

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/fluxcd/pkg/runtime/conditions"
	. "github.com/onsi/gomega"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

func TestTruncateKeepsRunesWhole(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Truncate("short", 10)).To(Equal("short"))
	long := strings.Repeat("é", 100) // two bytes each
	for n := 4; n < 40; n++ {
		got := Truncate(long, n)
		g.Expect(len(got)).To(BeNumerically("<=", n), "n=%d", n)
		g.Expect(utf8.ValidString(got)).To(BeTrue(), "n=%d", n)
		g.Expect(got).To(HaveSuffix("..."))
	}
}

func TestEnumerate(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Enumerate([]string{"a", "b"}, ", ", 3)).To(Equal("a, b"))
	g.Expect(Enumerate([]string{"a", "b", "c", "d", "e"}, ", ", 3)).To(Equal("a, b, c, … and 2 more"))
	g.Expect(Enumerate(nil, ", ", 3)).To(BeEmpty())
}

// TestConditionMessagesAreBounded: however long a message a step wrote,
// what is patched is bounded.
func TestConditionMessagesAreBounded(t *testing.T) {
	g := NewWithT(t)
	w := &workspacesv1.WorkspaceDeployment{}
	conditions.MarkFalse(w, "Ready", "Failed", "%s", strings.Repeat("x", 100_000))
	conditions.MarkTrue(w, "Other", "Fine", "short")
	boundConditions(w)
	g.Expect(len(conditions.GetMessage(w, "Ready"))).To(BeNumerically("<=", MaxConditionMessage))
	g.Expect(conditions.GetMessage(w, "Other")).To(Equal("short"))
}
