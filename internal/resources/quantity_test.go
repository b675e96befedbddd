package resources

import (
	"errors"
	"math"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestUnitCounts(t *testing.T) {
	cases := []struct {
		q           string
		unit        Unit
		ceil, floor int64
		err         error
	}{
		{q: "0", unit: Milli},
		{q: "2", unit: Milli, ceil: 2000, floor: 2000},
		{q: "250m", unit: Milli, ceil: 250, floor: 250},
		{q: "1.5", unit: Whole, ceil: 2, floor: 1},
		{q: "0.5m", unit: Milli, ceil: 1, floor: 0},
		{q: "1n", unit: Whole, ceil: 1, floor: 0},
		{q: "4096", unit: Milli, ceil: 4_096_000, floor: 4_096_000},
		{q: "64Ti", unit: Whole, ceil: 64 << 40, floor: 64 << 40},
		{q: "4Pi", unit: Whole, ceil: 4 << 50, floor: 4 << 50},
		{q: "4000000000000000", unit: Milli, ceil: 4e18, floor: 4e18},
		{q: "9223372036854775807m", unit: Milli, ceil: math.MaxInt64, floor: math.MaxInt64},
		{q: "9223372036854775808m", unit: Milli, err: ErrOverflow},
		{q: "16Pi", unit: Milli, err: ErrOverflow},
		{q: "1e1000", unit: Whole, err: ErrOverflow},
		{q: "1e18", unit: Whole, ceil: 1e18, floor: 1e18},
		{q: "1e19", unit: Whole, err: ErrOverflow},
		{q: "1e-3", unit: Milli, ceil: 1, floor: 1},
		{q: "-1", unit: Whole, err: ErrNegative},
		{q: "-1e30", unit: Milli, err: ErrNegative},
	}
	for _, tc := range cases {
		t.Run(tc.q, func(t *testing.T) {
			g := NewWithT(t)
			q := resource.MustParse(tc.q)
			ceil, errC := tc.unit.Ceil(q)
			floor, errF := tc.unit.Floor(q)
			if tc.err != nil {
				g.Expect(errors.Is(errC, tc.err)).To(BeTrue(), "Ceil: %v", errC)
				g.Expect(errors.Is(errF, tc.err)).To(BeTrue(), "Floor: %v", errF)
				g.Expect(tc.unit.SatCeil(q)).To(Equal(int64(math.MaxInt64)), "counted as the most it could be")
				return
			}
			g.Expect(errC).NotTo(HaveOccurred())
			g.Expect(errF).NotTo(HaveOccurred())
			g.Expect(ceil).To(Equal(tc.ceil))
			g.Expect(floor).To(Equal(tc.floor))
		})
	}
}

// A quantity's exponent is the tenant's to choose; Quantity.Cmp would build
// 10^100000000 from "1e100000000" and not return.
func TestHugeExponentsCountAtOnce(t *testing.T) {
	g := NewWithT(t)
	for _, s := range []string{"1e100000000", "1e2147483647", "123456789e999999999"} {
		q := resource.MustParse(s)
		start := time.Now()
		_, err := Milli.Ceil(q)
		g.Expect(errors.Is(err, ErrOverflow)).To(BeTrue(), s)
		g.Expect(Check(spec(1, 0, s, ""))).To(MatchError(ContainSubstring("perReplica.cpu")))
		g.Expect(time.Since(start)).To(BeNumerically("<", time.Second), s)
	}
}

func TestUnitQuantities(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Milli.Quantity(2500, resource.DecimalSI).String()).To(Equal("2500m"))
	g.Expect(Whole.Quantity(3<<30, resource.BinarySI).String()).To(Equal("3Gi"))
	total, err := Whole.Times(resource.MustParse("1Gi"), 3)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(total.String()).To(Equal("3Gi"))
	_, err = Milli.Times(resource.MustParse("4000000000000000"), 3)
	g.Expect(errors.Is(err, ErrOverflow)).To(BeTrue())

	c, err := Milli.Counted(resource.MustParse("-4611686018427387904m"))
	g.Expect(errors.Is(err, ErrNegative)).To(BeTrue())
	g.Expect(c.MilliValue()).To(Equal(int64(math.MaxInt64)), "kept as the most it could be")
	c, err = Whole.Counted(resource.MustParse("2Gi"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.String()).To(Equal("2Gi"))

	var s Sum
	s.Add(Milli.SatCeil(resource.MustParse("1")))
	s.Add(Milli.SatCeil(resource.MustParse("500m")))
	g.Expect(s.Int64()).To(Equal(int64(1500)))
	g.Expect(Milli.Exceeds(s, resource.MustParse("1500m"))).To(BeFalse())
	g.Expect(Milli.Exceeds(s, resource.MustParse("1.4999"))).To(BeTrue(), "a limit counts rounded down")
	g.Expect(Milli.Exceeds(s, resource.MustParse("-1"))).To(BeTrue())
	g.Expect(Milli.Exceeds(s, resource.MustParse("1e30"))).To(BeFalse(), "a limit past int64 holds any countable total")
	s.Add(math.MaxInt64)
	g.Expect(Milli.Exceeds(s, resource.MustParse("1e30"))).To(BeTrue(), "but not a saturated one")
}

func ptr[T any](v T) *T { return &v }
