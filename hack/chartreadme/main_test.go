package main

import (
	"os"
	"testing"

	. "github.com/onsi/gomega"
)

// TestChartReadmeIsFresh fails when the chart README's values table is not
// what values.yaml gives: a value added, removed, renamed or redescribed
// without `make chart-readme`.
func TestChartReadmeIsFresh(t *testing.T) {
	g := NewWithT(t)
	want, err := render("../../charts/apiary")
	g.Expect(err).NotTo(HaveOccurred())
	got, err := os.ReadFile("../../charts/apiary/README.md")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(got)).To(Equal(string(want)), "charts/apiary/README.md is stale: run make chart-readme")
}

func TestValuesTable(t *testing.T) {
	g := NewWithT(t)
	out, err := valuesTable([]byte(`# -- Replicas.
replicaCount: 1
image:
  # -- Repository, with a
  # second line | and a pipe for <name>.
  repository: r
  tag: ""
# -- All at once.
resources:
  limits: {memory: 1Gi}
empty: {}
list: [a]
`))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(out)).To(Equal("| Key | Type | Default | Description |\n|---|---|---|---|\n" +
		"| `replicaCount` | int | `1` | Replicas. |\n" +
		"| `image.repository` | string | `\"r\"` | Repository, with a second line \\| and a pipe for &lt;name&gt;. |\n" +
		"| `image.tag` | string | `\"\"` |  |\n" +
		"| `resources` | object | `{\"limits\":{\"memory\":\"1Gi\"}}` | All at once. |\n" +
		"| `empty` | object | `{}` |  |\n" +
		"| `list` | list | `[\"a\"]` |  |\n"))
}
