package routes

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
)

// TestGitWithoutFluxSource refuses to deliver routes when no
// GitRepository is known for their Kustomization, saying how to fix it.
func TestGitWithoutFluxSource(t *testing.T) {
	g := NewWithT(t)
	s := &Git{Path: "apiary-routes"}
	_, err := s.For(context.Background(), types.NamespacedName{Namespace: "kcm-system", Name: "region-a"})
	g.Expect(err).To(MatchError(ContainSubstring("set --git-repository, or --git-kustomization")))
	g.Expect(s.Folder(types.NamespacedName{Namespace: "kcm-system", Name: "region-a"})).To(Equal("apiary-routes/kcm-system/region-a"))
}
