package main

import (
	"testing"

	. "github.com/onsi/gomega"
)

// TestReasonsAreOneVocabulary fails when the repository's reasons break the
// one vocabulary: a reason declared and never set, declared outside api/ or
// twice, set as a literal, or made of a phase by string(x).
func TestReasonsAreOneVocabulary(t *testing.T) {
	g := NewWithT(t)
	s, err := scan("../..")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(check(s)).To(BeEmpty(), "fix the reasons as each line says, then run make conditions-docs")
}

// TestCheckFailsOnPlantedTrees runs the check over small source trees in
// testdata, each planted with what it must refuse, and asserts the exact
// failures: it proves that TestReasonsAreOneVocabulary can fail.
func TestCheckFailsOnPlantedTrees(t *testing.T) {
	cases := []struct {
		tree string
		want []string
	}{
		{"testdata/unused", []string{
			`reason "Used" is declared more than once: api/things/v1.TwinReason, api/things/v1.UsedReason`,
			`reason api/things/v1.UnusedReason ("Unused") is declared and never set: set it, delete it, or list it as exalsius-only`,
		}},
		{"testdata/literal", []string{
			`internal/thing/thing.go: reason "Broken" is set as a literal and declared nowhere: declare it in the reasons.go of its API group and set the constant`,
			`internal/thing/thing.go: reason "Used" is set as a literal: set the constant (api/things/v1.UsedReason)`,
			`reason internal/thing.localReason ("Local") is declared outside api/: declare it in the reasons.go of its API group`,
		}},
		{"testdata/phase", []string{
			`internal/thing/thing.go: reason is set from string(phase): name a phase with commonv1.PhaseReason, any other reason with its constant`,
			`reason api/things/v1.ForeignReason ("Foreign") is exalsius-only but set in internal/thing/thing.go: move it out of the exalsius-only list`,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.tree, func(t *testing.T) {
			g := NewWithT(t)
			s, err := scan(tc.tree)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(check(s)).To(Equal(tc.want))
		})
	}
}
