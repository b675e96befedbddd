package chart

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
)

// TestNotesNameEveryDeployment: the install notes name the Deployment the
// chart renders, and with sharding each shard's, never a Deployment that
// does not exist.
func TestNotesNameEveryDeployment(t *testing.T) {
	ch := loadChart(t)
	for _, vals := range []map[string]any{{}, {"replicaCount": 2}, {"sharding": map[string]any{"shards": 3}}} {
		g := NewWithT(t)
		objs, err := render(ch, releaseName, releaseNamespace, vals)
		g.Expect(err).NotTo(HaveOccurred())
		notes := renderNotes(t, vals)
		var names []string
		for _, d := range find(objs, "Deployment") {
			names = append(names, d.GetName())
			g.Expect(notes).To(ContainSubstring("logs deploy/"+d.GetName()+"\n"), "%v", vals)
		}
		g.Expect(strings.Count(notes, "logs deploy/")).To(Equal(len(names)), "%v: no other Deployment:\n%s", vals, notes)
	}
}

// renderNotes renders NOTES.txt as `helm install` prints it.
func renderNotes(t *testing.T, vals map[string]any) string {
	t.Helper()
	ch := loadChart(t)
	rv, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{
		Name: releaseName, Namespace: releaseNamespace, IsInstall: true, Revision: 1}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(ch, rv)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range files {
		if strings.HasSuffix(name, "/NOTES.txt") {
			return s
		}
	}
	t.Fatal("no NOTES.txt")
	return ""
}
