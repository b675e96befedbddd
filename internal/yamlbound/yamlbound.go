// Package yamlbound decodes YAML that a tenant wrote without letting it
// expand beyond a budget. YAML anchors and aliases let a few KiB of text
// stand for gigabytes once every alias is copied, which is what
// sigs.k8s.io/yaml does (it converts YAML to JSON before decoding). Here a
// document is first parsed into yaml.v3 nodes, which keep each alias as a
// reference (memory linear in the text), and its expanded size is counted
// with every alias expanded; only a document within the budget is decoded.
package yamlbound

import (
	"errors"
	"fmt"
	"math"

	yamlv3 "go.yaml.in/yaml/v3"
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
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(data, &doc); err != nil {
		return 0, 0, ErrInvalid
	}
	s := sizer{memo: map[*yamlv3.Node]count{}}
	c := s.size(&doc)
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
