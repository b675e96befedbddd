package resources

import (
	"errors"
	"math"
	"math/big"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Unit is the int64 count a quantity is held in: the quantity times 10^exp.
type Unit struct{ exp int64 }

var (
	// Milli counts thousandths, the smallest CPU Kubernetes schedules.
	Milli = Unit{exp: 3}
	// Whole counts whole units: bytes of memory and storage. Milli-bytes
	// would not do: 1000 replicas of 64Ti are 7e19 of them, beyond int64.
	Whole = Unit{exp: 0}
)

// maxPow10 is the largest power of ten an int64 holds.
const maxPow10 = 18

// Ceil is a quantity in the unit, rounded up: what a request or a usage
// counts, never less than it is.
func (u Unit) Ceil(q resource.Quantity) (int64, error) { return u.count(q, true) }

// Floor is a quantity in the unit, rounded down: what a limit allows,
// never more than it is.
func (u Unit) Floor(q resource.Quantity) (int64, error) { return u.count(q, false) }

// count scales q to the unit without building a number larger than q's
// own digits, however large its exponent.
func (u Unit) count(q resource.Quantity, up bool) (int64, error) {
	switch q.Sign() {
	case 0:
		return 0, nil
	case -1:
		return 0, ErrNegative
	}
	d := q.AsDec() // q is a copy; the caller's quantity is not touched
	unscaled := d.UnscaledBig()
	// q is unscaled × 10^-scale, so the count is unscaled × 10^e.
	e := u.exp - int64(d.Scale())
	if e >= 0 {
		if e > maxPow10 {
			return 0, ErrOverflow // unscaled ≥ 1
		}
		r := new(big.Int).Mul(unscaled, pow10(e))
		if !r.IsInt64() {
			return 0, ErrOverflow
		}
		return r.Int64(), nil
	}
	if -e >= int64(unscaled.BitLen()) {
		// 10^-e > 2^-e ≥ 2^BitLen > unscaled: a positive fraction below 1.
		if up {
			return 1, nil
		}
		return 0, nil
	}
	quo, rem := new(big.Int).QuoRem(unscaled, pow10(-e), new(big.Int))
	if up && rem.Sign() != 0 {
		quo.Add(quo, big.NewInt(1))
	}
	if !quo.IsInt64() {
		return 0, ErrOverflow
	}
	return quo.Int64(), nil
}

func pow10(n int64) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(n), nil) }

// Quantity is a count of the unit as a quantity of format f.
func (u Unit) Quantity(n int64, f resource.Format) *resource.Quantity {
	q := resource.NewScaledQuantity(n, resource.Scale(-u.exp))
	q.Format = f
	return q
}

// Times is q per replica times replicas, counted in the unit (rounded up
// per replica), as a quantity of q's format.
func (u Unit) Times(q resource.Quantity, replicas int64) (*resource.Quantity, error) {
	per, err := u.Ceil(q)
	if err != nil {
		return nil, err
	}
	total, err := Mul(per, replicas)
	if err != nil {
		return nil, err
	}
	return u.Quantity(total, q.Format), nil
}

// SatCeil is Ceil where an error counts as the most an amount can be:
// math.MaxInt64 for a quantity that is negative or beyond int64.
func (u Unit) SatCeil(q resource.Quantity) int64 {
	n, err := u.Ceil(q)
	if err != nil {
		return math.MaxInt64
	}
	return n
}

// Counted is a copy of q when the unit counts it, else, with the error, the
// most a count can be: math.MaxInt64 of the unit. A record keeps that in
// place of an amount that is negative or beyond int64.
func (u Unit) Counted(q resource.Quantity) (*resource.Quantity, error) {
	if _, err := u.Ceil(q); err != nil {
		return u.Quantity(math.MaxInt64, resource.DecimalSI), err
	}
	c := q.DeepCopy()
	return &c, nil
}

// Exceeds reports whether a total in the unit is above a limit quantity:
// exactly, with the limit rounded down. A saturated total exceeds every
// limit, and every total exceeds a negative one; a limit beyond int64 is
// exceeded only by a saturated total.
func (u Unit) Exceeds(total Sum, limit resource.Quantity) bool {
	n, err := u.Floor(limit)
	switch {
	case errors.Is(err, ErrNegative):
		return true
	case err != nil:
		return total.Saturated()
	}
	return total.Exceeds(n)
}
