package kcmmatrix

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	"github.com/apiaryhq/apiary/internal/testenv"
)

// matrix lists the releases the tests above check.
var matrix = []release{kcm180, kcm190, kcm1114, kcm112}

// The README and the chart state the releases the matrix tests, no more
// and no fewer.
func TestSupportedReleasesStated(t *testing.T) {
	g := NewWithT(t)
	var versions []string
	for _, r := range matrix {
		versions = append(versions, r.version)
	}

	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "charts", "apiary", "Chart.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var chart struct {
		Annotations map[string]string `json:"annotations"`
	}
	g.Expect(yaml.Unmarshal(data, &chart)).To(Succeed())
	g.Expect(chart.Annotations).To(HaveKeyWithValue("apiary.dev/kcm-versions-tested", strings.Join(versions, ", ")))
	g.Expect(chart.Annotations).To(HaveKeyWithValue("apiary.dev/kcm-versions", ">=1.8.0 <1.13.0"))

	readme, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "README.md"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(readme)).To(ContainSubstring("Supported k0rdent releases: kcm v1.8 to v1.12."))
	for _, v := range versions {
		g.Expect(string(readme)).To(MatchRegexp(`(?m)^\| v\d+\.\d+ \| `+regexp(v)+` \|`), "the README's table names %s", v)
	}
}

// regexp quotes the dots of a version.
func regexp(v string) string { return strings.ReplaceAll(v, ".", `\.`) }
