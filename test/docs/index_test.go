package docs_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// TestDocsIndexListsEveryDoc fails when a document of docs/ is missing from
// the index, docs/README.md.
func TestDocsIndexListsEveryDoc(t *testing.T) {
	g := NewWithT(t)
	index, err := os.ReadFile(filepath.Join(root, "docs", "README.md"))
	g.Expect(err).NotTo(HaveOccurred())
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	g.Expect(err).NotTo(HaveOccurred())
	var missing []string
	for _, d := range docs {
		name := filepath.Base(d)
		if name != "README.md" && !strings.Contains(string(index), "]("+name+")") {
			missing = append(missing, name)
		}
	}
	g.Expect(missing).To(BeEmpty(), "docs/README.md does not list these documents")
}
