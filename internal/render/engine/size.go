package engine

import (
	"errors"
	"fmt"
	"reflect"
	"unsafe"
)

// errCycle is what putting a map or list inside itself gives: printing or
// copying it would recurse until the manager's stack overflows, which no
// recover catches.
var errCycle = errors.New("a map or list cannot contain itself")

// identity names a map, slice or pointer, to find it again.
type identity struct {
	p unsafe.Pointer
	n int
}

// sizer measures template values as fmt, JSON, YAML and deepCopy expand
// them: every reference is walked again (a map used twice counts twice),
// and each node costs two bytes per level of nesting besides its own size,
// as YAML indents it. It stops as soon as the size passes limit, so its
// work is bounded by limit whatever the value.
type sizer struct {
	limit   int64
	onPath  map[identity]bool
	visited int64
	err     error // errCycle when a cycle is found
}

func newSizer(limit int64) *sizer {
	return &sizer{limit: limit, onPath: map[identity]bool{}}
}

// size returns the expanded size of v; more than s.limit means "too large".
func (s *sizer) size(v reflect.Value, depth int64) int64 {
	s.visited++
	own := 8 + 2*depth
	switch v.Kind() {
	case reflect.String:
		return own + int64(v.Len())
	case reflect.Interface:
		if v.IsNil() {
			return own
		}
		return s.size(v.Elem(), depth)
	case reflect.Pointer:
		if v.IsNil() {
			return own
		}
		return s.enter(identity{p: v.UnsafePointer()}, own, func(total int64) int64 {
			return total + s.size(v.Elem(), depth)
		})
	case reflect.Map:
		if v.IsNil() {
			return own
		}
		return s.enter(identity{p: v.UnsafePointer()}, own, func(total int64) int64 {
			for it := v.MapRange(); it.Next() && total <= s.limit; {
				total += s.size(it.Key(), depth+1) + s.size(it.Value(), depth+1)
			}
			return total
		})
	case reflect.Slice:
		if v.IsNil() || v.Len() == 0 {
			return own
		}
		if flat(v.Type().Elem()) {
			return own + int64(v.Len())*int64(v.Type().Elem().Size())
		}
		return s.enter(identity{p: v.UnsafePointer(), n: v.Len()}, own, func(total int64) int64 {
			return s.elements(v, total, depth)
		})
	case reflect.Array:
		return s.elements(v, own, depth)
	case reflect.Struct:
		total := own
		for i := 0; i < v.NumField() && total <= s.limit; i++ {
			total += s.size(v.Field(i), depth+1)
		}
		return total
	default:
		return own
	}
}

func (s *sizer) elements(v reflect.Value, total, depth int64) int64 {
	for i := 0; i < v.Len() && total <= s.limit; i++ {
		total += s.size(v.Index(i), depth+1)
	}
	return total
}

// enter walks a node that can be referenced from several places, and
// refuses one found inside itself.
func (s *sizer) enter(id identity, own int64, walk func(int64) int64) int64 {
	if s.onPath[id] {
		s.err = errCycle
		return s.limit + 1
	}
	if own > s.limit {
		return own
	}
	s.onPath[id] = true
	total := walk(own)
	delete(s.onPath, id)
	return total
}

// flat reports whether values of t hold no references: their size is the
// type's.
func flat(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return true
	}
	return false
}

// measure returns the expanded size of values, charging the walk to the
// guard's steps (one step per 64 nodes). It fails when the size is over
// limit, or a value contains itself.
func (g *guard) measure(what string, limit int64, values ...reflect.Value) (int64, error) {
	s := newSizer(limit)
	var total int64
	for _, v := range values {
		total += s.size(v, 0)
		if total > limit || s.err != nil {
			break
		}
	}
	if err := g.step(s.visited / 64); err != nil {
		return 0, err
	}
	if s.err != nil {
		return 0, fmt.Errorf("%s: %w", what, s.err)
	}
	if total > limit {
		return 0, g.tooLarge(what, total)
	}
	return total, nil
}
