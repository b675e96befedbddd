// Package yamlbound decodes YAML that a tenant wrote without letting it
// expand beyond a budget. YAML anchors and aliases let a few KiB of text
// stand for gigabytes once every alias is copied, which is what
// sigs.k8s.io/yaml does (it converts YAML to JSON before decoding). Here a
// document is first parsed into yaml.v3 nodes, which keep each alias as a
// reference (memory linear in the text), and its expanded size is counted
// with every alias expanded; only a document within the budget is decoded.
package yamlbound

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"math"

	yamlv3 "go.yaml.in/yaml/v3"
	"k8s.io/utils/lru"
	"sigs.k8s.io/yaml"
)

// ErrTooLarge is the error of text, or of a document once its aliases are
// expanded, larger than the limit it was decoded with.
var ErrTooLarge = errors.New("YAML document too large")

// ErrInvalid is the error of text that is no YAML. Its message never
// quotes the text, which may come from a Secret.
var ErrInvalid = errors.New("not a valid YAML document")

// ExpandedSize returns the size of the JSON that the first YAML document
// of data expands to, every alias copied, as sigs.k8s.io/yaml converts it
// (each scalar and key with its quotes, each bracket and separator). It stops counting beyond limit and returns an error
// wrapping ErrTooLarge then, and one wrapping ErrInvalid for text that does
// not parse. Its time and memory are linear in len(data), whatever the
// aliases.
func ExpandedSize(data []byte, limit int64) (int64, error) {
	n, _, err := Measure(data, limit)
	return n, err
}

// Measure is ExpandedSize, and the number of values (scalars, lists and
// maps) the document expands to, every alias copied.
func Measure(data []byte, limit int64) (size, values int64, err error) {
	c, ok := measured(data)
	if !ok {
		return 0, 0, ErrInvalid
	}
	if c.bytes > limit {
		return c.bytes, c.values, fmt.Errorf("%w: it expands to more than %d bytes", ErrTooLarge, limit)
	}
	return c.bytes, c.values, nil
}

// Unmarshal decodes the first YAML (or JSON) document of data into out as
// sigs.k8s.io/yaml.Unmarshal does, after checking that data is at most
// limit bytes and expands to at most limit bytes (ExpandedSize): a document
// over the limit is refused before anything is expanded. Errors wrap
// ErrTooLarge or ErrInvalid and never quote data.
func Unmarshal(data []byte, out any, limit int64) error {
	if int64(len(data)) > limit {
		return fmt.Errorf("%w: %d bytes, more than %d", ErrTooLarge, len(data), limit)
	}
	if _, err := ExpandedSize(data, limit); err != nil {
		return err
	}
	if err := yaml.Unmarshal(data, out); err != nil {
		return ErrInvalid
	}
	return nil
}

// measuredTexts remembers what recent texts expand to, by their SHA-256:
// a reconcile measures the same values text several times (rendering,
// delivery, the admission check) and every reconcile of an unchanged
// workspace measures it again, each time a parse into yaml.v3 nodes.
// Texts shorter than minMemoBytes are parsed again instead.
var measuredTexts = lru.New(4096)

const minMemoBytes = 256

// measured is what data's first document expands to; false when data is
// not YAML.
func measured(data []byte) (count, bool) {
	var key [sha256.Size]byte
	memo := len(data) >= minMemoBytes
	if memo {
		key = sha256.Sum256(data)
		if v, ok := measuredTexts.Get(key); ok {
			c := v.(count)
			return c, c.bytes >= 0
		}
	}
	c, ok := measure(data)
	if memo {
		if !ok {
			c = count{-1, -1}
		}
		measuredTexts.Add(key, c)
	}
	return c, ok
}

// measure parses data into yaml.v3 nodes and counts what they expand to.
func measure(data []byte) (count, bool) {
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(data, &doc); err != nil {
		return count{}, false
	}
	s := sizer{memo: map[*yamlv3.Node]count{}}
	return s.size(&doc), true
}

// sizer counts expanded sizes, each node once: an alias costs what its
// anchor expands to, looked up.
type sizer struct {
	memo map[*yamlv3.Node]count
}

// count is what a node expands to.
type count struct{ bytes, values int64 }

var unbounded = count{math.MaxInt64, math.MaxInt64}

func (s *sizer) size(n *yamlv3.Node) count {
	if n == nil {
		return count{}
	}
	if v, ok := s.memo[n]; ok {
		if v.bytes < 0 {
			// An alias inside its own anchor: yaml.v3 refuses such
			// documents; count it as unbounded should one get here.
			return unbounded
		}
		return v
	}
	s.memo[n] = count{-1, -1}
	var total count
	switch n.Kind {
	case yamlv3.AliasNode:
		total = s.size(n.Alias)
	case yamlv3.ScalarNode:
		// With its quotes (escapes left out: the bound is of the order
		// of the memory, not of the exact bytes).
		total = count{add(2, int64(len(n.Value))), 1}
	case yamlv3.DocumentNode:
		for _, c := range n.Content {
			cs := s.size(c)
			total = count{add(total.bytes, cs.bytes), add(total.values, cs.values)}
		}
	default: // mappings and sequences: brackets and separators
		total = count{2, 1}
		for _, c := range n.Content {
			cs := s.size(c)
			total = count{add(total.bytes, add(cs.bytes, 1)), add(total.values, cs.values)}
		}
	}
	s.memo[n] = total
	return total
}

func add(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
