package workspace

import (
	"testing"

	. "github.com/onsi/gomega"
)

// TestSameTenant: preemption stays within a tenant: one namespace, or
// namespaces that exactly the same TenantQuotas select.
func TestSameTenant(t *testing.T) {
	q := func(names ...string) map[string]bool {
		out := map[string]bool{}
		for _, n := range names {
			out[n] = true
		}
		return out
	}
	cases := []struct {
		name string
		a, b tenant
		want bool
	}{
		{"one namespace, no quota", tenant{"a", q()}, tenant{"a", q()}, true},
		{"two namespaces, no quota", tenant{"a", q()}, tenant{"b", q()}, false},
		{"two namespaces of one quota", tenant{"a", q("team")}, tenant{"b", q("team")}, true},
		{"two teams under one platform-wide quota", tenant{"a", q("all", "team-a")}, tenant{"b", q("all", "team-b")}, false},
		{"one quota more on one side", tenant{"a", q("all", "team")}, tenant{"b", q("all")}, false},
		{"one quota less on one side", tenant{"a", q("all")}, tenant{"b", q("all", "team")}, false},
		{"the same two quotas", tenant{"a", q("all", "team")}, tenant{"b", q("team", "all")}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(sameTenant(tc.a, tc.b)).To(Equal(tc.want))
			g.Expect(sameTenant(tc.b, tc.a)).To(Equal(tc.want), "symmetric")
		})
	}
}
