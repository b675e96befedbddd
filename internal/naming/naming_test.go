package naming

import (
	"crypto/sha256"
	"encoding/hex"
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
	long := strings.Repeat("colony-", 20)
	tests := []struct {
		in       string
		verbatim bool
	}{
		{in: "", verbatim: true},
		{in: "Colony", verbatim: true},
		{in: "gpu-pool.eu-1", verbatim: true},
		{in: strings.Repeat("a", 63), verbatim: true},
		{in: strings.Repeat("a", 64)},
		{in: long},
		{in: "-starts-with-dash"},
		{in: "has space/and:colon"},
		{in: "----"},
		{in: "nvidia.com/gpu"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			g := NewWithT(t)
			got := LabelValue(tt.in)
			g.Expect(validation.IsValidLabelValue(got)).To(BeEmpty(), "%q", got)
			if tt.verbatim {
				g.Expect(got).To(Equal(tt.in))
				return
			}
			g.Expect(got).NotTo(Equal(tt.in))
			g.Expect(LabelValue(tt.in+"x")).NotTo(Equal(got), "different inputs give different values")
		})
	}
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

func TestWaypointName(t *testing.T) {
	long := strings.Repeat("c", 60)
	cases := []struct {
		name, cd, want string
	}{
		{"short", "child-1", "child-1-waypoint"},
		{"exactly 63", strings.Repeat("a", 54), strings.Repeat("a", 54) + "-waypoint"},
		// The operator's rule: 45 characters of the name, '-', 8 hex of sha256(cd), "-waypoint".
		{"64 is cut and hashed", strings.Repeat("b", 55), strings.Repeat("b", 45) + "-eb2c86e9-waypoint"},
		{"long", long, strings.Repeat("c", 45) + "-" + sha8(long) + "-waypoint"},
		{"nothing is trimmed from the cut", strings.Repeat("d", 44) + "-" + strings.Repeat("e", 20),
			strings.Repeat("d", 44) + "--" + sha8(strings.Repeat("d", 44)+"-"+strings.Repeat("e", 20)) + "-waypoint"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got := WaypointName(tc.cd)
			g.Expect(got).To(Equal(tc.want))
			g.Expect(len(got)).To(BeNumerically("<=", 63))
			g.Expect(validation.IsValidLabelValue(got)).To(BeEmpty(), "it is the value of istio.io/use-waypoint")
		})
	}
	NewWithT(t).Expect(WaypointName(long+"x")).NotTo(Equal(WaypointName(long+"y")), "distinct long names stay distinct")
}

func sha8(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:8]
}

// FuzzWaypointName: for any ClusterDeployment name, the waypoint name is at
// most 63 characters, a valid label value when the name's first 45
// characters are one, deterministic, and the name itself plus -waypoint
// whenever that fits.
func FuzzWaypointName(f *testing.F) {
	for _, s := range []string{"c1", strings.Repeat("a", 54), strings.Repeat("a", 55), "x.y", strings.Repeat("é", 40), ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cd string) {
		got := WaypointName(cd)
		if got != WaypointName(cd) {
			t.Fatal("not deterministic")
		}
		if len(cd)+len("-waypoint") <= 63 {
			if got != cd+"-waypoint" {
				t.Fatalf("%q: got %q", cd, got)
			}
			return
		}
		if len(got) != 63 || !strings.HasPrefix(got, cd[:45]) || !strings.HasSuffix(got, "-waypoint") {
			t.Fatalf("%q: got %q", cd, got)
		}
		if len(validation.IsDNS1123Label(strings.ToLower(cd[:45]))) == 0 && len(validation.IsValidLabelValue(got)) > 0 {
			t.Fatalf("%q: %q is no label value", cd, got)
		}
	})
}
