package gpu

import (
	"testing"

	. "github.com/onsi/gomega"
)

// TestNoVendorMeansDefaultResource: a request without a vendor and a quota
// limit without a resource both mean DefaultResource, NVIDIA's.
func TestNoVendorMeansDefaultResource(t *testing.T) {
	g := NewWithT(t)
	g.Expect(DefaultResource).To(Equal(ResourceNVIDIA))
	r, err := ResourceFor(" ")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r).To(Equal(DefaultResource))
	g.Expect(ResourceOrDefault("")).To(Equal(DefaultResource))
	g.Expect(ResourceOrDefault(ResourceAMD)).To(Equal(ResourceAMD))
}
