package render

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	infrav1 "github.com/apiaryhq/apiary/api/infra/v1"
)

// writeBundle writes files (paths with "/") under dir/name.
func writeBundle(t *testing.T, dir, name string, files map[string]string) string {
	t.Helper()
	root := filepath.Join(dir, name)
	for p, data := range files {
		full := filepath.Join(root, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestRegistryBuiltIn(t *testing.T) {
	g := NewWithT(t)
	r, err := NewRegistry("")
	g.Expect(err).NotTo(HaveOccurred())
	b, err := r.Get(ColonyClusterBundle)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(b.Name).To(Equal(ColonyClusterBundle))
	g.Expect(r.Sources()).To(ContainElement(Source{Name: ColonyClusterBundle, Origin: SourceBuiltIn}))

	_, err = r.Get("no-such-bundle")
	g.Expect(errors.Is(err, ErrBundleNotFound)).To(BeTrue())
	g.Expect(err).To(MatchError(ContainSubstring(`"no-such-bundle"`)))
	g.Expect(err).To(MatchError(ContainSubstring(ColonyClusterBundle)))
}

func TestRegistryDirectoryBundles(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	cm := func(name string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: {{ .Input.colony.namespace }}\n"
	}
	writeBundle(t, dir, "extra", map[string]string{"Chart.yaml": testChart, "templates/cm.yaml": cm("extra")})
	overrideDir := writeBundle(t, dir, ColonyClusterBundle, map[string]string{"Chart.yaml": testChart, "templates/cm.yaml": cm("override")})
	writeBundle(t, dir, ".hidden", map[string]string{"broken": "x"})
	g.Expect(os.WriteFile(filepath.Join(dir, "README.md"), []byte("not a bundle"), 0o644)).To(Succeed())

	r, err := NewRegistry(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.Sources()).To(ContainElements(
		Source{Name: ColonyClusterBundle, Origin: overrideDir, OverridesBuiltIn: true},
		Source{Name: "extra", Origin: filepath.Join(dir, "extra")},
	))
	g.Expect(r.Sources()).NotTo(ContainElement(HaveField("Name", ".hidden")))

	colony := &infrav1.Colony{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}
	req, err := ColonyClusterRequest(colony, &infrav1.ColonyCluster{ClusterName: "a"}, "c-a", nil)
	g.Expect(err).NotTo(HaveOccurred())
	b, err := r.Get(ColonyClusterBundle)
	g.Expect(err).NotTo(HaveOccurred())
	out, err := b.Render(req)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kindNames(out)).To(Equal([]string{"ConfigMap/ns/override"}))
}

func TestRegistryDirectoryErrors(t *testing.T) {
	t.Run("broken bundle", func(t *testing.T) {
		g := NewWithT(t)
		dir := t.TempDir()
		writeBundle(t, dir, "broken", map[string]string{"Chart.yaml": testChart, "templates/cm.yaml": "{{ end }}"})
		_, err := NewRegistry(dir)
		g.Expect(err).To(MatchError(ContainSubstring(`bundle "broken": template error at templates/cm.yaml:1`)))
		g.Expect(err).To(MatchError(ContainSubstring(filepath.Join(dir, "broken"))))
	})
	t.Run("invalid folder name", func(t *testing.T) {
		g := NewWithT(t)
		dir := t.TempDir()
		writeBundle(t, dir, "Bad_Name", map[string]string{"Chart.yaml": testChart})
		_, err := NewRegistry(dir)
		g.Expect(err).To(MatchError(ContainSubstring("Bad_Name")))
	})
	t.Run("missing directory", func(t *testing.T) {
		_, err := NewRegistry(filepath.Join(t.TempDir(), "nope"))
		NewWithT(t).Expect(err).To(HaveOccurred())
	})
	t.Run("symbolic link out of the bundle", func(t *testing.T) {
		g := NewWithT(t)
		dir := t.TempDir()
		outside := filepath.Join(t.TempDir(), "secret.txt")
		g.Expect(os.WriteFile(outside, []byte("secret"), 0o600)).To(Succeed())
		root := writeBundle(t, dir, "leaky", map[string]string{"Chart.yaml": testChart})
		g.Expect(os.Symlink(outside, filepath.Join(root, "secret.txt"))).To(Succeed())
		_, err := NewRegistry(dir)
		t.Log(err)
		g.Expect(err).To(MatchError(ContainSubstring("secret.txt")))
		g.Expect(err.Error()).NotTo(ContainSubstring("secret\""))
	})
}

// A ConfigMap mounted as a volume: flat "__" keys that are symbolic links
// into a "..data" folder.
func TestRegistryConfigMapVolume(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	root := writeBundle(t, dir, "mounted", map[string]string{
		"..2026_01_01/Chart.yaml":              testChart,
		"..2026_01_01/templates__cm.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ include \"n\" . }}\n",
		"..2026_01_01/templates___helpers.tpl": `{{ define "n" }}mounted{{ end }}`,
	})
	g.Expect(os.Symlink("..2026_01_01", filepath.Join(root, "..data"))).To(Succeed())
	for _, f := range []string{"Chart.yaml", "templates__cm.yaml", "templates___helpers.tpl"} {
		g.Expect(os.Symlink(filepath.Join("..data", f), filepath.Join(root, f))).To(Succeed())
	}
	r, err := NewRegistry(dir)
	g.Expect(err).NotTo(HaveOccurred())
	b, err := r.Get("mounted")
	g.Expect(err).NotTo(HaveOccurred())
	out, err := renderAny(b, Request{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kindNames(out)).To(Equal([]string{"ConfigMap//mounted"}))
}
