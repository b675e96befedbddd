package naming

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/validation"
)

func TestBounded(t *testing.T) {
	long := strings.Repeat("a", 50) + "-" + strings.Repeat("b", 30)
	cases := []struct {
		name, in string
		check    func(g Gomega, out string)
	}{
		{"short names are kept", "quickstart-child-1", func(g Gomega, out string) { g.Expect(out).To(Equal("quickstart-child-1")) }},
		{"63 characters are kept", strings.Repeat("x", 63), func(g Gomega, out string) { g.Expect(out).To(HaveLen(63)) }},
		{"long names are cut and hashed", long, func(g Gomega, out string) {
			g.Expect(len(out)).To(BeNumerically("<=", 63))
			g.Expect(out).To(HavePrefix(strings.Repeat("a", 50)))
			g.Expect(out).To(MatchRegexp(`-[0-9a-f]{8}$`))
			g.Expect(validation.IsDNS1123Label(out)).To(BeEmpty())
		}},
		{"no trailing dash before the hash", strings.Repeat("a", 53) + "-" + strings.Repeat("c", 20), func(g Gomega, out string) {
			g.Expect(out).NotTo(ContainSubstring("--"))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			tc.check(g, Bounded(tc.in))
			g.Expect(Bounded(tc.in)).To(Equal(Bounded(tc.in)), "deterministic")
		})
	}
	NewWithT(t).Expect(Bounded(long+"x")).NotTo(Equal(Bounded(long+"y")), "distinct long names stay distinct")
}

func TestLabelValue(t *testing.T) {
	g := NewWithT(t)
	g.Expect(LabelValue("child-1")).To(Equal("child-1"))
	bad := LabelValue("nvidia.com/gpu")
	g.Expect(bad).To(MatchRegexp(`^hash-[0-9a-f]{16}$`))
	g.Expect(validation.IsValidLabelValue(bad)).To(BeEmpty())
}

func FuzzBounded(f *testing.F) {
	f.Add("quickstart-child-1")
	f.Add(strings.Repeat("z", 100))
	f.Fuzz(func(t *testing.T, in string) {
		out := Bounded(in)
		if len(in) <= MaxNameLength && out != in {
			t.Fatalf("short name changed: %q -> %q", in, out)
		}
		if len(in) > MaxNameLength && len(out) > MaxNameLength {
			t.Fatalf("%q bounded to %d characters", in, len(out))
		}
	})
}
