package workspace

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/apiaryhq/apiary/internal/admission"
)

// TestDescribeGPUsNamesThePinnedVendor: a request that pins a vendor never
// reads "any GPU".
func TestDescribeGPUsNamesThePinnedVendor(t *testing.T) {
	g := NewWithT(t)
	g.Expect(describeGPUs(&admission.Request{})).To(Equal("any GPU"))
	g.Expect(describeGPUs(&admission.Request{Resource: "nvidia.com/gpu"})).To(Equal("any NVIDIA GPU"))
	g.Expect(describeGPUs(&admission.Request{Resource: "amd.com/gpu"})).To(Equal("any AMD GPU"))
	g.Expect(describeGPUs(&admission.Request{Selector: map[string]string{"exalsius.ai/gpu-model": "A10"}})).To(Equal(`model "A10"`))
	g.Expect(describeGPUs(&admission.Request{Resource: "nvidia.com/gpu", Selector: map[string]string{"exalsius.ai/gpu-model": "A10"}})).
		To(Equal(`model "A10" (NVIDIA)`))
}
