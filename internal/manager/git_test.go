package manager

import (
	"testing"

	. "github.com/onsi/gomega"
)

func TestParseObjectRef(t *testing.T) {
	g := NewWithT(t)
	ref, err := ParseObjectRef("--x", "flux-system/fleet")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ref.String()).To(Equal("flux-system/fleet"))
	ref, err = ParseObjectRef("--x", "")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ref).To(BeNil())
	for _, bad := range []string{"fleet", "/fleet", "ns/", "a/b/c"} {
		_, err := ParseObjectRef("--x", bad)
		g.Expect(err).To(MatchError(ContainSubstring("--x must be <namespace>/<name>")), bad)
	}
}
