// Package resources is what a workspace asks for, as checked products and
// sums: per-replica amounts times replicas, the charge of an admission
// record, and totals over many workspaces, computed so that none overflows,
// none goes negative and none is ever under-counted.
//
// Three kinds of arithmetic serve three kinds of callers. Checked
// arithmetic (Mul, Add, Unit.Ceil) returns ErrOverflow or ErrNegative for
// what a caller can refuse: a workspace's request. Saturating arithmetic
// (SatAdd, SatSub, SatMul) clamps to the int64 range for what a caller must
// compute anyway, such as the free GPUs of a node. Sum totals usage exactly
// and reads back at most math.MaxInt64, so a total is never lower than the
// amounts it holds. Limits bound what one workspace may ask for; Check
// refuses more, and the API server's CRD rules refuse the same.
package resources

import (
	"cmp"
	"errors"
	"math"
	"math/bits"
)

var (
	// ErrOverflow means the exact result does not fit an int64.
	ErrOverflow = errors.New("overflows int64")
	// ErrNegative means an amount is below zero.
	ErrNegative = errors.New("is negative")
)

// Mul returns a×b of two non-negative counts.
func Mul(a, b int64) (int64, error) {
	if a < 0 || b < 0 {
		return 0, ErrNegative
	}
	if a != 0 && b > math.MaxInt64/a {
		return 0, ErrOverflow
	}
	return a * b, nil
}

// Add returns a+b of two non-negative counts.
func Add(a, b int64) (int64, error) {
	if a < 0 || b < 0 {
		return 0, ErrNegative
	}
	if a > math.MaxInt64-b {
		return 0, ErrOverflow
	}
	return a + b, nil
}

// SatAdd returns a+b clamped to the int64 range.
func SatAdd(a, b int64) int64 {
	s := a + b
	switch {
	case a >= 0 && b >= 0 && s < 0:
		return math.MaxInt64
	case a < 0 && b < 0 && s >= 0:
		return math.MinInt64
	}
	return s
}

// SatSub returns a-b clamped to the int64 range.
func SatSub(a, b int64) int64 {
	d := a - b
	switch {
	case a >= 0 && b < 0 && d < 0:
		return math.MaxInt64
	case a < 0 && b > 0 && d >= 0:
		return math.MinInt64
	}
	return d
}

// SatMul returns a×b clamped to the int64 range.
func SatMul(a, b int64) int64 {
	hi, lo := bits.Mul64(abs(a), abs(b))
	if (a < 0) != (b < 0) {
		if hi != 0 || lo > 1<<63 {
			return math.MinInt64
		}
		return int64(-lo)
	}
	if hi != 0 || lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(lo)
}

// abs is |v| as a uint64, exact for math.MinInt64 too.
func abs(v int64) uint64 {
	if v < 0 {
		return uint64(^v) + 1
	}
	return uint64(v)
}

// Sum is a total of non-negative amounts, exact up to 2^127, read back
// saturated at math.MaxInt64. Its zero value is 0. A negative amount is
// no usage that a record can hold: Add counts it as math.MaxInt64, the
// most an amount can be, so a corrupt record never lowers a total, and Sub
// removes it the same way.
type Sum struct{ hi, lo uint64 }

// amount is what Add and Sub count of n.
func amount(n int64) uint64 {
	if n < 0 {
		return math.MaxInt64
	}
	return uint64(n)
}

// Add puts an amount in.
func (s *Sum) Add(n int64) {
	var carry uint64
	s.lo, carry = bits.Add64(s.lo, amount(n), 0)
	s.hi += carry
}

// Sub takes out an amount that Add put in; a Sum never goes below zero.
func (s *Sum) Sub(n int64) {
	u := amount(n)
	if s.hi == 0 && s.lo < u {
		*s = Sum{}
		return
	}
	var borrow uint64
	s.lo, borrow = bits.Sub64(s.lo, u, 0)
	s.hi -= borrow
}

// Minus returns the total less o, or zero when o is more.
func (s Sum) Minus(o Sum) Sum {
	if s.compare(o) <= 0 {
		return Sum{}
	}
	var borrow uint64
	s.lo, borrow = bits.Sub64(s.lo, o.lo, 0)
	s.hi -= o.hi + borrow
	return s
}

// Stored is a total read back from where it was written as Int64: one
// written saturated (math.MaxInt64) held at least that much, unknown how
// much more, and stays saturated whatever is taken out of it (2^32 amounts
// of math.MaxInt64 would be needed), so that it never under-counts.
func Stored(n int64) Sum {
	if n == math.MaxInt64 || n < 0 {
		return Sum{hi: 1 << 32}
	}
	return Sum{lo: uint64(n)}
}

// Int64 is the total, math.MaxInt64 when it is that much or more.
func (s Sum) Int64() int64 {
	if s.Saturated() {
		return math.MaxInt64
	}
	return int64(s.lo)
}

// Saturated reports whether the total reached math.MaxInt64: Int64 then
// says no more than "at least that much".
func (s Sum) Saturated() bool { return s.hi != 0 || s.lo >= math.MaxInt64 }

// Exceeds reports whether the total is above a limit. A saturated total
// exceeds every limit, and every total exceeds a negative one.
func (s Sum) Exceeds(limit int64) bool {
	return s.Saturated() || limit < 0 || s.lo > uint64(limit)
}

// compare returns -1, 0 or 1 as the total is below, at or above another.
func (s Sum) compare(o Sum) int {
	if c := cmp.Compare(s.hi, o.hi); c != 0 {
		return c
	}
	return cmp.Compare(s.lo, o.lo)
}
