package resources

import (
	"errors"
	"math"
	"math/big"
	"testing"

	. "github.com/onsi/gomega"
)

// clamp is the exact v clamped to the int64 range.
func clamp(v *big.Int) int64 {
	switch {
	case v.Cmp(big.NewInt(math.MaxInt64)) > 0:
		return math.MaxInt64
	case v.Cmp(big.NewInt(math.MinInt64)) < 0:
		return math.MinInt64
	}
	return v.Int64()
}

var edges = []int64{0, 1, -1, 2, -2, 3, 1000, -1000, 1 << 31, math.MaxInt32, math.MaxInt64 / 2, math.MaxInt64/2 + 1,
	math.MaxInt64 - 1, math.MaxInt64, math.MinInt64, math.MinInt64 + 1, math.MinInt64 / 2, 3037000499, 3037000500}

func TestSaturatingArithmeticIsTheClampedExactResult(t *testing.T) {
	g := NewWithT(t)
	for _, a := range edges {
		for _, b := range edges {
			x, y := big.NewInt(a), big.NewInt(b)
			g.Expect(SatAdd(a, b)).To(Equal(clamp(new(big.Int).Add(x, y))), "%d + %d", a, b)
			g.Expect(SatSub(a, b)).To(Equal(clamp(new(big.Int).Sub(x, y))), "%d - %d", a, b)
			g.Expect(SatMul(a, b)).To(Equal(clamp(new(big.Int).Mul(x, y))), "%d × %d", a, b)
		}
	}
}

func TestCheckedArithmetic(t *testing.T) {
	cases := []struct {
		name    string
		f       func(a, b int64) (int64, error)
		a, b    int64
		want    int64
		wantErr error
	}{
		{"product", Mul, 64, 1000, 64000, nil},
		{"product by zero", Mul, 0, math.MaxInt64, 0, nil},
		{"the largest product", Mul, math.MaxInt64, 1, math.MaxInt64, nil},
		{"a product past int64", Mul, 4_000_000_000_000_000_000, 3, 0, ErrOverflow},
		{"a negative factor", Mul, -1, 3, 0, ErrNegative},
		{"sum", Add, 2, 3, 5, nil},
		{"the largest sum", Add, math.MaxInt64 - 1, 1, math.MaxInt64, nil},
		{"a sum past int64", Add, math.MaxInt64, 1, 0, ErrOverflow},
		{"a negative term", Add, 5, -1, 0, ErrNegative},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := tc.f(tc.a, tc.b)
			if tc.wantErr != nil {
				g.Expect(errors.Is(err, tc.wantErr)).To(BeTrue(), "got %v", err)
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestSumIsExactAndReadsBackSaturated(t *testing.T) {
	g := NewWithT(t)
	var s Sum
	s.Add(math.MaxInt64)
	s.Add(math.MaxInt64)
	s.Add(5)
	g.Expect(s.Int64()).To(Equal(int64(math.MaxInt64)), "past int64 reads as math.MaxInt64")
	g.Expect(s.Saturated()).To(BeTrue())
	g.Expect(s.Exceeds(math.MaxInt64)).To(BeTrue(), "a saturated total exceeds every limit")
	s.Sub(math.MaxInt64)
	s.Sub(math.MaxInt64)
	g.Expect(s.Int64()).To(Equal(int64(5)), "taking amounts out is exact: nothing was lost to saturation")
	g.Expect(s.Exceeds(5)).To(BeFalse())
	g.Expect(s.Exceeds(4)).To(BeTrue())
	g.Expect(s.Exceeds(-1)).To(BeTrue(), "every total exceeds a negative limit")

	var corrupt Sum
	corrupt.Add(-3)
	g.Expect(corrupt.Int64()).To(Equal(int64(math.MaxInt64)), "a negative amount counts as the most it could be")
	corrupt.Sub(-3)
	g.Expect(corrupt.Int64()).To(BeZero())
	corrupt.Sub(7)
	g.Expect(corrupt.Int64()).To(BeZero(), "a Sum never goes below zero")

	var a, b Sum
	a.Add(10)
	b.Add(4)
	g.Expect(a.Minus(b).Int64()).To(Equal(int64(6)))
	g.Expect(b.Minus(a).Int64()).To(BeZero())
}
