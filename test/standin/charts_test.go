package standin

import (
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
)

func TestChartNames(t *testing.T) {
	g := NewWithT(t)
	g.Expect(ChartNames()).To(ContainElements(ChartWorkspace, ChartWorkspaceHub, ChartPrerequisite))
	for _, bad := range []string{"", "nope", "..", "workspace/templates", "."} {
		_, err := loadChart(bad)
		g.Expect(err).To(HaveOccurred(), "chart %q", bad)
	}
}

// TestChartsRender renders the shipped charts as Helm would install them.
func TestChartsRender(t *testing.T) {
	tests := []struct {
		chart    string
		values   string
		contains map[string][]string // template file -> substrings
	}{
		{
			chart:  ChartWorkspace,
			values: `{"greeting":"hi","endpoints":[{"name":"http","port":80},{"name":"grpc","port":9090}]}`,
			contains: map[string][]string{
				"workspace/templates/values.yaml":    {"name: rel-values", "namespace: ns", `"greeting":"hi"`},
				"workspace/templates/endpoints.yaml": {"name: rel-http", "port: 80", "name: rel-grpc", "port: 9090", "type: ClusterIP"},
			},
		},
		{
			chart:    ChartWorkspace,
			contains: map[string][]string{"workspace/templates/values.yaml": {`"endpoints":[]`}},
		},
		{
			chart:  ChartWorkspaceHub,
			values: `{"replicas":3,"endpoints":[{"name":"http","port":8888}]}`,
			contains: map[string][]string{
				"workspace-hub/templates/values.yaml":     {"name: rel-values", `"replicas":3`},
				"workspace-hub/templates/endpoints.yaml":  {"name: rel-http", "port: 8888"},
				"workspace-hub/templates/deployment.yaml": {"name: rel\n", "replicas: 1\n", "claimName: rel\n"},
				"workspace-hub/templates/pvc.yaml":        {"kind: PersistentVolumeClaim", "name: rel\n", "ReadWriteOnce"},
			},
		},
		{
			chart:    ChartPrerequisite,
			contains: map[string][]string{"prerequisite/templates/installed.yaml": {"name: rel-installed", "namespace: ns"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.chart, func(t *testing.T) {
			g := NewWithT(t)
			c, err := loadChart(tt.chart)
			g.Expect(err).NotTo(HaveOccurred())
			values, err := ParseValues([]byte(tt.values))
			g.Expect(err).NotTo(HaveOccurred())
			render, err := chartutil.ToRenderValues(c, values, chartutil.ReleaseOptions{Name: "rel", Namespace: "ns", IsInstall: true}, nil)
			g.Expect(err).NotTo(HaveOccurred())
			out, err := engine.Render(c, render)
			g.Expect(err).NotTo(HaveOccurred())
			for file, subs := range tt.contains {
				g.Expect(out).To(HaveKey(file))
				for _, s := range subs {
					g.Expect(out[file]).To(ContainSubstring(s), file)
				}
			}
		})
	}
}
