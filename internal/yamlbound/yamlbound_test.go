package yamlbound

import (
	"encoding/json"
	"errors"
	"runtime"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/apiaryhq/apiary/internal/yamlbound/yamlboundtest"
)

// allocated is the bytes the process allocated while f ran.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestBombIsRefusedBeforeItExpands: a 7 KiB document that expands to
// about 6 GiB is refused, and refusing it allocates a few MiB at most.
func TestBombIsRefusedBeforeItExpands(t *testing.T) {
	g := NewWithT(t)
	doc := yamlboundtest.AliasBomb(9, 9, 6000)
	g.Expect(len(doc)).To(BeNumerically("<", 7*1024))
	size, err := ExpandedSize([]byte(doc), 4<<20)
	g.Expect(errors.Is(err, ErrTooLarge)).To(BeTrue(), "%v", err)
	g.Expect(size).To(BeNumerically(">", int64(6000)*387420489))
	var out map[string]any
	measuredTexts.Clear() // what the measurement costs, not the memo
	alloc := allocated(func() { err = Unmarshal([]byte(doc), &out, 4<<20) })
	g.Expect(errors.Is(err, ErrTooLarge)).To(BeTrue(), "%v", err)
	g.Expect(err.Error()).NotTo(ContainSubstring("xxx"), "never quotes the document")
	g.Expect(out).To(BeNil())
	g.Expect(alloc).To(BeNumerically("<", 4<<20), "refusing the bomb allocated %d bytes", alloc)
	t.Logf("refusing a %d-byte document that expands to %d bytes allocated %d bytes", len(doc), size, alloc)
}

// TestWithinTheLimitDecodes: documents within the limit decode as
// sigs.k8s.io/yaml decodes them, aliases included.
func TestWithinTheLimitDecodes(t *testing.T) {
	g := NewWithT(t)
	var out map[string]any
	g.Expect(Unmarshal([]byte("a: &a {x: 1}\nb: *a\nc: [1, two]\n"), &out, 1024)).To(Succeed())
	g.Expect(out).To(Equal(map[string]any{"a": map[string]any{"x": float64(1)}, "b": map[string]any{"x": float64(1)},
		"c": []any{float64(1), "two"}}))
	g.Expect(Unmarshal([]byte(`{"a": [1, 2]}`), &out, 1024)).To(Succeed())
	g.Expect(Unmarshal([]byte(strings.Repeat("a", 2000)), &out, 1024)).To(MatchError(ErrTooLarge))
	g.Expect(Unmarshal([]byte("a: [\n"), &out, 1024)).To(MatchError(ErrInvalid))
	size, err := ExpandedSize([]byte(yamlboundtest.AliasBomb(3, 4, 10)), 1<<20)
	g.Expect(err).NotTo(HaveOccurred())
	var v any
	g.Expect(Unmarshal([]byte(yamlboundtest.AliasBomb(3, 4, 10)), &v, 1<<20)).To(Succeed())
	data, _ := json.Marshal(v)
	g.Expect(int64(len(data))).To(BeNumerically("<=", size), "the estimate bounds the JSON from above")
}

// FuzzUnmarshal: whatever the text, Unmarshal with a limit either fails
// or decodes a value whose JSON is within the limit (scalars' escapes
// aside: at most six bytes each), and never allocates more than a fixed
// multiple of the text and the limit.
func FuzzUnmarshal(f *testing.F) {
	f.Add("a: 1\n", int64(64))
	f.Add(yamlboundtest.AliasBomb(4, 8, 16), int64(4096))
	f.Add(yamlboundtest.AliasBomb(9, 9, 100), int64(65536))
	f.Add("a: &a [*a]\n", int64(1024))
	f.Add("<<: &m {a: 1}\nb: {<<: *m, c: [*m, *m]}\n", int64(256))
	f.Add(`{"a": "\u007b\u007b"}`, int64(64))
	f.Fuzz(func(t *testing.T, doc string, limit int64) {
		limit = max(0, min(limit, 1<<16))
		var out any
		var err error
		alloc := allocated(func() { err = Unmarshal([]byte(doc), &out, limit) })
		if ceiling := 512*uint64(len(doc)+int(limit)) + 1<<20; alloc > ceiling {
			t.Fatalf("decoding %d bytes with a limit of %d allocated %d bytes, above %d", len(doc), limit, alloc, ceiling)
		}
		// The memo answers what a fresh measurement does, every time.
		fresh, valid := measure([]byte(doc))
		for range 2 {
			size, values, merr := Measure([]byte(doc), limit)
			switch {
			case !valid && !errors.Is(merr, ErrInvalid):
				t.Fatalf("Measure of text that is no YAML: %v", merr)
			case valid && (size != fresh.bytes || values != fresh.values):
				t.Fatalf("Measure gave %d bytes and %d values, a fresh measurement %d and %d", size, values, fresh.bytes, fresh.values)
			}
		}
		if err != nil {
			if !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrInvalid) {
				t.Fatalf("unexpected error: %v", err)
			}
			return
		}
		data, err := json.Marshal(out)
		if err != nil {
			t.Fatalf("decoded a value JSON cannot encode: %v", err)
		}
		if int64(len(data)) > 6*limit+2 {
			t.Fatalf("decoded %d bytes of JSON with a limit of %d", len(data), limit)
		}
	})
}
