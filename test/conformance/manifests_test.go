package conformance

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/apiaryhq/apiary/internal/testenv"
)

// exampleDirs are the folders of example manifests shipped in the repository.
var exampleDirs = []string{"examples", "config/samples", "gitops-examples"}

func yamlFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	root := filepath.Join(testenv.RepoRoot(), dir)
	if _, err := os.Stat(root); os.IsNotExist(err) {
		return nil
	}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasPrefix(filepath.Base(path), "values") {
			return nil // Helm values for the chart, tested by test/chart
		}
		if !d.IsDir() && (strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walking %s: %v", root, err)
	}
	return files
}

func ensureNamespace(ctx context.Context, name string) error {
	if name == "" {
		return nil
	}
	err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

func TestExamplesApplyCleanly(t *testing.T) {
	ctx := context.Background()
	var count int
	for _, dir := range exampleDirs {
		for _, file := range yamlFiles(t, dir) {
			rel, _ := filepath.Rel(testenv.RepoRoot(), file)
			t.Run(rel, func(t *testing.T) {
				g := NewWithT(t)
				objs, err := testenv.ReadObjects(file)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(objs).NotTo(BeEmpty(), "an example file holds at least one object")
				for _, obj := range objs {
					if strings.HasPrefix(obj.GetAPIVersion(), "kustomize.config.k8s.io/") {
						continue // a kustomize build file, not an object
					}
					g.Expect(ensureNamespace(ctx, obj.GetNamespace())).To(Succeed())
					err := env.Client.Create(ctx, obj, client.DryRunAll)
					if obj.GetKind() == "Namespace" && apierrors.IsAlreadyExists(err) {
						err = nil // created for a sibling example's objects
					}
					g.Expect(err).NotTo(HaveOccurred(), "%s %s/%s", obj.GetKind(), obj.GetNamespace(), obj.GetName())
					count++
				}
			})
		}
	}
	if count == 0 {
		t.Fatal("no example manifests found")
	}
}

// expectations reads the "# expect: <text>" lines of an invalid manifest.
func expectations(t *testing.T, file string) []string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "# expect: "); ok {
			out = append(out, rest)
		}
	}
	return out
}

func TestInvalidManifestsAreRefused(t *testing.T) {
	ctx := context.Background()
	files := yamlFiles(t, "test/conformance/testdata/invalid")
	if len(files) == 0 {
		t.Fatal("no invalid manifests found")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			g := NewWithT(t)
			want := expectations(t, file)
			g.Expect(want).NotTo(BeEmpty(), "each invalid manifest says what the API server answers")
			objs, err := testenv.ReadObjects(file)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(objs).To(HaveLen(1))
			obj := objs[0]
			g.Expect(ensureNamespace(ctx, obj.GetNamespace())).To(Succeed())
			err = env.Client.Create(ctx, obj, client.DryRunAll)
			g.Expect(err).To(HaveOccurred(), "the API server accepted an invalid manifest")
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want an Invalid error, got %v", err)
			for _, w := range want {
				g.Expect(err.Error()).To(ContainSubstring(w))
			}
		})
	}
}
