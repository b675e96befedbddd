package chart

import (
	"os/exec"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"

	"github.com/apiaryhq/apiary/internal/testenv"
)

// makeVar is what the Makefile says a variable is (make -s print-VAR).
func makeVar(t *testing.T, name string) string {
	t.Helper()
	cmd := exec.Command("make", "-s", "--no-print-directory", "print-"+name)
	cmd.Dir = testenv.RepoRoot()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make print-%s: %v", name, err)
	}
	return strings.TrimSpace(string(out))
}

// renderedImage is the manager image of the chart rendered with vals.
func renderedImage(t *testing.T, vals map[string]any) string {
	t.Helper()
	objs, err := render(loadChart(t), releaseName, releaseNamespace, vals)
	if err != nil {
		t.Fatal(err)
	}
	deploys := find(objs, "Deployment")
	if len(deploys) != 1 {
		t.Fatalf("%d Deployments rendered", len(deploys))
	}
	d := convert[appsv1.Deployment](NewWithT(t), deploys[0])
	return d.Spec.Template.Spec.Containers[0].Image
}

// TestChartPullsTheImageMakeBuilds: a default install pulls exactly the
// image `make image` names, and the version the binary is stamped with is
// the chart's appVersion (and its version: one release train).
func TestChartPullsTheImageMakeBuilds(t *testing.T) {
	ch := loadChart(t)
	if got, want := renderedImage(t, nil), makeVar(t, "IMAGE"); got != want {
		t.Errorf("the chart pulls %q, make image builds %q", got, want)
	}
	if v := makeVar(t, "VERSION"); v != ch.Metadata.AppVersion || v != ch.Metadata.Version {
		t.Errorf("make stamps version %q; Chart.yaml has appVersion %q, version %q", v, ch.Metadata.AppVersion, ch.Metadata.Version)
	}
	// The release workflow pushes to another registry with IMAGE_REPO; the
	// chart follows with image.repository and image.tag.
	got := renderedImage(t, map[string]any{"image": map[string]any{"repository": "registry.example/apiary", "tag": "9.9.9"}})
	if got != "registry.example/apiary:9.9.9" {
		t.Errorf("with image values set the chart pulls %q", got)
	}
}
