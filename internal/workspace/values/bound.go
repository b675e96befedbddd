package values

import (
	"errors"
	"fmt"

	"github.com/apiaryhq/apiary/internal/yamlbound"
)

// Bounds of what Apiary reads from a workspace's valuesFrom objects and
// what their documents may expand to (YAML aliases copied), checked before
// anything is decoded: a few KiB of anchors and aliases must not take the
// manager's memory from every tenant.
const (
	// MaxSourceBytes bounds the content of one valuesFrom key: 1 MiB,
	// what the API server stores in one Secret or ConfigMap.
	MaxSourceBytes int64 = 1 << 20
	// MaxSourcesBytes bounds the content of all valuesFrom keys of a
	// workspace together: 2 MiB.
	MaxSourcesBytes int64 = 2 << 20
	// MaxExpandedBytes bounds what one document expands to, counted as
	// the JSON it becomes (yamlbound.ExpandedSize): 4 MiB.
	MaxExpandedBytes int64 = 4 << 20
	// MaxExpandedTotalBytes bounds what a workspace's valuesFrom documents
	// expand to together: 8 MiB.
	MaxExpandedTotalBytes int64 = 8 << 20
)

// ErrTooLarge is the error of valuesFrom content beyond the bounds.
var ErrTooLarge = errors.New("values too large")

// Budget is what a workspace's valuesFrom sources may still read and
// expand to. The zero Budget allows nothing; NewBudget allows the bounds.
type Budget struct {
	read, expanded int64
}

// NewBudget is the budget of one workspace.
func NewBudget() *Budget {
	return &Budget{read: MaxSourcesBytes, expanded: MaxExpandedTotalBytes}
}

// charge takes n bytes read from the budget, refusing content above
// MaxSourceBytes or the bytes left.
func (b *Budget) charge(n int64) error {
	if n > MaxSourceBytes {
		return fmt.Errorf("%w: the content is %d bytes, more than the %d bytes one valuesFrom source may hold", ErrTooLarge, n, MaxSourceBytes)
	}
	if n > b.read {
		return fmt.Errorf("%w: the workspace's valuesFrom sources hold more than %d bytes together", ErrTooLarge, MaxSourcesBytes)
	}
	b.read -= n
	return nil
}

// decode decodes a YAML or JSON document into a map (nil for an empty
// document) within the budget, before anything is expanded.
func (b *Budget) decode(content []byte) (map[string]any, error) {
	if err := b.charge(int64(len(content))); err != nil {
		return nil, err
	}
	limit := min(MaxExpandedBytes, b.expanded)
	size, err := yamlbound.ExpandedSize(content, limit)
	switch {
	case errors.Is(err, yamlbound.ErrTooLarge) && limit < MaxExpandedBytes:
		return nil, fmt.Errorf("%w: the workspace's valuesFrom documents expand to more than %d bytes together (YAML aliases copied)", ErrTooLarge, MaxExpandedTotalBytes)
	case errors.Is(err, yamlbound.ErrTooLarge):
		return nil, fmt.Errorf("%w: the document expands to more than %d bytes (YAML aliases copied)", ErrTooLarge, MaxExpandedBytes)
	case err != nil:
		// The decoder's message may quote the content: leave it out.
		return nil, errors.New("values content is not a YAML map")
	}
	b.expanded -= size
	var doc map[string]any
	if err := yamlbound.Unmarshal(content, &doc, limit); err != nil {
		return nil, errors.New("values content is not a YAML map")
	}
	return doc, nil
}
