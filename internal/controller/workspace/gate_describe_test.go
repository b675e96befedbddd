package workspace

import (
	"strings"
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

// TestAheadOfNamesOnlyTheOwnNamespace: a shared queue's message names the
// workspaces of the reader's namespace and only counts the others.
func TestAheadOfNamesOnlyTheOwnNamespace(t *testing.T) {
	cases := []struct {
		ns   string
		keys []string
		want string
	}{
		{"a", []string{"a/x", "a/y"}, "x, y"},
		{"a", []string{"a/x", "b/secret-project", "c/zeta"}, "x and 2 workspace(s) of other namespaces"},
		{"a", []string{"b/secret-project"}, "1 workspace(s) of other namespaces"},
		{"a", nil, ""},
		{"a", []string{"a/1", "a/2", "a/3", "a/4", "a/5", "a/6", "ab/7"}, "1, 2, 3, 4, 5, … and 1 more and 1 workspace(s) of other namespaces"},
	}
	for _, c := range cases {
		got := aheadOf(c.ns, c.keys)
		if got != c.want {
			t.Errorf("aheadOf(%q, %v) = %q, want %q", c.ns, c.keys, got, c.want)
		}
		for _, k := range c.keys {
			if ns, name, _ := strings.Cut(k, "/"); ns != c.ns && strings.Contains(got, name) {
				t.Errorf("aheadOf(%q, %v) names %s of another namespace", c.ns, c.keys, k)
			}
		}
	}
}
