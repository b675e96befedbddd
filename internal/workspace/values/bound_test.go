package values

import (
	"errors"
	"runtime"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/apiaryhq/apiary/internal/yamlbound/yamlboundtest"
)

// A valuesFrom document of 7 KiB whose aliases expand to 60 MB (which
// sigs.k8s.io/yaml decoded, allocating 438 MiB) is refused before it is
// expanded, and refusing it allocates little.
func TestMergeFromRefusesAliasBombs(t *testing.T) {
	g := NewWithT(t)
	bomb := []byte(yamlboundtest.AliasBomb(2, 100, 6000))
	g.Expect(len(bomb)).To(BeNumerically("<", 8<<10))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	out, err := MergeFrom(map[string]any{"a": 1}, bomb, "")
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("refusing %d bytes allocated %d KiB: %v", len(bomb), alloc>>10, err)
	g.Expect(errors.Is(err, ErrTooLarge)).To(BeTrue(), "got %v", err)
	g.Expect(err.Error()).To(ContainSubstring("expands to more than 4194304 bytes"))
	g.Expect(err.Error()).NotTo(ContainSubstring("xxx"))
	g.Expect(out).To(BeNil())
	g.Expect(alloc).To(BeNumerically("<", 4<<20))
}

// The bounds of a workspace's valuesFrom: 1 MiB a source, 2 MiB together,
// 4 MiB expanded a document, 8 MiB expanded together; targetPath content
// counts too.
func TestBudgetBoundsAWorkspacesSources(t *testing.T) {
	g := NewWithT(t)
	doc := func(n int) []byte { return []byte("a: " + strings.Repeat("x", n-3)) }

	_, err := MergeFrom(nil, doc(int(MaxSourceBytes)+1), "")
	g.Expect(err).To(MatchError(ContainSubstring("more than the 1048576 bytes one valuesFrom source may hold")))
	_, err = MergeFrom(nil, doc(int(MaxSourceBytes)+1), "a.b")
	g.Expect(errors.Is(err, ErrTooLarge)).To(BeTrue())

	b := NewBudget()
	for i := range 2 {
		_, err := MergeFromBudget(nil, doc(int(MaxSourceBytes)), "", b)
		g.Expect(err).NotTo(HaveOccurred(), "source %d", i)
	}
	_, err = MergeFromBudget(nil, []byte("b"), "x", b)
	g.Expect(err).To(MatchError(ContainSubstring("hold more than 2097152 bytes together")))

	// Each 600 KiB document expands to 3 MB: two fit, the third exceeds 8 MiB together.
	b = &Budget{read: 1 << 30, expanded: MaxExpandedTotalBytes}
	wide := []byte("l0: &l0 " + strings.Repeat("y", 60<<10) + "\nl1: [" + strings.Repeat("*l0, ", 49) + "*l0]\n")
	for i := range 2 {
		_, err := MergeFromBudget(nil, wide, "", b)
		g.Expect(err).NotTo(HaveOccurred(), "document %d", i)
	}
	_, err = MergeFromBudget(nil, wide, "", b)
	g.Expect(err).To(MatchError(ContainSubstring("expand to more than 8388608 bytes together")))
}
