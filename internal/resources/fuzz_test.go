package resources

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	workspacesv1 "github.com/apiaryhq/apiary/api/workspaces/v1"
)

var (
	maxInt64 = big.NewInt(math.MaxInt64)
	exponent = regexp.MustCompile(`[eE]([-+]?[0-9]+)$`)
)

// slowParse reports what resource.ParseQuantity itself takes minutes on:
// an exponent below -100 (it rounds 1e-99999 to nano by building 10^99999),
// including one that only its cast of the exponent to int32 makes negative
// ("1e10000001000000000" is 1e-1420047872). Not this package's cost: the
// CRDs refuse exponents of three digits or more.
func slowParse(s string) bool {
	m := exponent.FindStringSubmatch(s)
	if m == nil {
		return false
	}
	e, err := strconv.ParseInt(m[1], 10, 64)
	return err == nil && int32(e) < -100
}

// exactCount is ceil (up) or floor of q × 10^exp, exactly; nil when q's
// exponent puts it past any int64 count (|count| > 10^40).
func exactCount(q resource.Quantity, u Unit, up bool) *big.Int {
	d := q.AsDec()
	e := u.exp - int64(d.Scale())
	unscaled := new(big.Int).Set(d.UnscaledBig())
	if unscaled.Sign() == 0 {
		return unscaled
	}
	switch {
	case e > 40:
		return nil
	case e >= 0:
		return unscaled.Mul(unscaled, pow10(e))
	case -e > int64(unscaled.BitLen()): // |q| is a fraction of the unit
		switch {
		case unscaled.Sign() > 0 && up:
			return big.NewInt(1)
		case unscaled.Sign() < 0 && !up:
			return big.NewInt(-1)
		}
		return new(big.Int)
	}
	r := new(big.Rat).SetFrac(unscaled, pow10(-e))
	quo := new(big.Int).Quo(r.Num(), r.Denom()) // truncated toward zero
	if new(big.Rat).SetInt(quo).Cmp(r) != 0 && up == (r.Sign() > 0) {
		quo.Add(quo, big.NewInt(int64(r.Sign())))
	}
	return quo
}

// countAgrees checks a count of the unit against the exact one: the count
// when it fits int64 and is not negative, else the error that says why.
func countAgrees(t *testing.T, what string, q resource.Quantity, u Unit, up bool, got int64, err error) {
	t.Helper()
	want := exactCount(q, u, up)
	switch {
	case q.Sign() < 0:
		if !errors.Is(err, ErrNegative) {
			t.Fatalf("%s of %s: got %d, %v; want ErrNegative", what, q.String(), got, err)
		}
	case want == nil || want.Cmp(maxInt64) > 0:
		if !errors.Is(err, ErrOverflow) {
			t.Fatalf("%s of %s: got %d, %v; want ErrOverflow", what, q.String(), got, err)
		}
	case err != nil || got != want.Int64():
		t.Fatalf("%s of %s: got %d, %v; want %s", what, q.String(), got, err, want)
	}
}

// FuzzCharge: per-replica quantities of any shape (huge exponents,
// negative, fractions of a milli-unit) and replica counts of any sign give
// a demand and a charge that never panic, are never negative and never
// count less than the exact product, or say why they cannot.
// go test ./internal/resources -run '^$' -fuzz FuzzCharge -fuzztime 30s
func FuzzCharge(f *testing.F) {
	f.Add("4000000000000000", "4Pi", int64(1), int32(3))
	f.Add("500m", "1536Mi", int64(8), int32(1000))
	f.Add("0.0001m", "1.5", int64(64), int32(0))
	f.Add("1e100000000", "-1Gi", int64(-1), int32(-1))
	f.Add("9223372036854775807m", "100000Ei", int64(math.MaxInt64), int32(math.MaxInt32))
	f.Add("4096", "64Ti", int64(math.MinInt64), int32(math.MinInt32))
	f.Fuzz(func(t *testing.T, cpuStr, memStr string, gpus int64, replicas int32) {
		if len(cpuStr) > 48 || len(memStr) > 48 || slowParse(cpuStr) || slowParse(memStr) {
			t.Skip()
		}
		// A hang would stop the fuzzer without naming its input; this names it.
		timer := time.AfterFunc(10*time.Second, func() { panic(fmt.Sprintf("hung on %q %q %d %d", cpuStr, memStr, gpus, replicas)) })
		defer timer.Stop()
		cpu, errC := resource.ParseQuantity(cpuStr)
		mem, errM := resource.ParseQuantity(memStr)
		if errC != nil || errM != nil {
			t.Skip()
		}
		for _, u := range []Unit{Milli, Whole} {
			for _, q := range []resource.Quantity{cpu, mem} {
				n, err := u.Ceil(q)
				countAgrees(t, "Ceil", q, u, true, n, err)
				n, err = u.Floor(q)
				countAgrees(t, "Floor", q, u, false, n, err)
			}
		}

		gpuCount := int32(max(min(gpus, math.MaxInt32), math.MinInt32))
		res := workspacesv1.WorkspaceResourceSpec{Replicas: &replicas, PerReplica: &workspacesv1.PerReplicaResources{
			GPUCount: &gpuCount, CPU: &cpu, Memory: &mem}}
		d, err := DemandOf(res)
		r := big.NewInt(int64(replicas))
		product := func(per *big.Int) *big.Int { return new(big.Int).Mul(per, r) }
		var wantErr bool
		if replicas < 0 || gpuCount < 0 || cpu.Sign() < 0 || mem.Sign() < 0 {
			wantErr = true
		} else {
			for _, p := range []*big.Int{product(big.NewInt(int64(gpuCount))), perTimes(cpu, Milli, r), perTimes(mem, Whole, r)} {
				if p == nil || p.Cmp(maxInt64) > 0 {
					wantErr = true
				}
			}
		}
		if (err != nil) != wantErr {
			t.Fatalf("DemandOf(%d × gpus %d, cpu %s, memory %s): error %v, want one: %v", replicas, gpuCount, cpu.String(), mem.String(), err, wantErr)
		}
		if err == nil {
			if d.GPUs < 0 || d.GPUs != int64(gpuCount)*int64(replicas) {
				t.Fatalf("GPUs %d of %d × %d", d.GPUs, gpuCount, replicas)
			}
			atLeast(t, "demanded cpu", d.CPU, Milli, new(big.Rat).Mul(rat(cpu), new(big.Rat).SetInt(r)))
			atLeast(t, "demanded memory", d.Memory, Whole, new(big.Rat).Mul(rat(mem), new(big.Rat).SetInt(r)))
		}
		if Check(res) == nil && err != nil {
			t.Fatalf("Check accepts what DemandOf cannot multiply: %v", err)
		}

		a := &workspacesv1.WorkspaceAdmission{GPUsPerReplica: gpus, Replicas: replicas, CPU: &cpu, Memory: &mem}
		c, err := AdmissionCharge(a)
		exactGPUs := new(big.Int).Mul(big.NewInt(gpus), r)
		switch {
		case c.GPUs < 0:
			t.Fatalf("a negative GPU charge %d", c.GPUs)
		case gpus == 0 || replicas == 0:
			if c.GPUs != 0 {
				t.Fatalf("%d GPUs charged for %d × %d", c.GPUs, gpus, replicas)
			}
		case gpus < 0 || replicas < 0 || exactGPUs.Cmp(maxInt64) >= 0:
			if c.GPUs != math.MaxInt64 || err == nil {
				t.Fatalf("%d × %d charged %d GPUs (%v), want math.MaxInt64 and an error", gpus, replicas, c.GPUs, err)
			}
		case c.GPUs != exactGPUs.Int64():
			t.Fatalf("%d × %d charged %d GPUs", gpus, replicas, c.GPUs)
		}
		for _, x := range []struct {
			what           string
			total, charged *resource.Quantity
			unit           Unit
		}{{"cpu", &cpu, c.CPU, Milli}, {"memory", &mem, c.Memory, Whole}} {
			if _, cerr := x.unit.Ceil(*x.total); cerr != nil {
				if err == nil || x.charged.Cmp(*x.unit.Quantity(math.MaxInt64, resource.DecimalSI)) != 0 {
					t.Fatalf("%s %s charged %v (%v), want the most a count can be and an error", x.what, x.total.String(), x.charged, err)
				}
				continue
			}
			atLeast(t, "charged "+x.what, x.charged, x.unit, rat(*x.total))
		}
	})
}

// perTimes is ceil(q in the unit) × replicas, exactly; nil when the
// per-replica count alone is past int64 (an error even for 0 replicas).
func perTimes(q resource.Quantity, u Unit, replicas *big.Int) *big.Int {
	per := exactCount(q, u, true)
	if per == nil || per.Cmp(maxInt64) > 0 {
		return nil
	}
	return per.Mul(per, replicas)
}

// rat is q exactly; only called on quantities a unit counts.
func rat(q resource.Quantity) *big.Rat {
	if q.Sign() == 0 {
		return new(big.Rat) // "e1100000000" is 0 × 10^1100000000
	}
	d := q.AsDec()
	if d.Scale() >= 0 {
		return new(big.Rat).SetFrac(d.UnscaledBig(), pow10(int64(d.Scale())))
	}
	return new(big.Rat).SetInt(new(big.Int).Mul(d.UnscaledBig(), pow10(-int64(d.Scale()))))
}

// atLeast fails unless a total counts, is not negative and is not below exact.
func atLeast(t *testing.T, what string, got *resource.Quantity, u Unit, exact *big.Rat) {
	t.Helper()
	if got == nil {
		t.Fatalf("%s: nil for %s", what, exact.FloatString(3))
	}
	if _, err := u.Ceil(*got); err != nil {
		t.Fatalf("%s %s does not count: %v", what, got.String(), err)
	}
	if got.Sign() < 0 || rat(*got).Cmp(exact) < 0 {
		t.Fatalf("%s %s is below the exact %s", what, got.String(), exact.FloatString(3))
	}
}

// FuzzArith: the saturating operations are the exact results clamped to
// int64, and a Sum reads back min(exact total, math.MaxInt64).
// go test ./internal/resources -run '^$' -fuzz FuzzArith -fuzztime 30s
func FuzzArith(f *testing.F) {
	f.Add(int64(math.MaxInt64), int64(1), int64(-1))
	f.Add(int64(math.MinInt64), int64(-1), int64(3037000500))
	f.Fuzz(func(t *testing.T, a, b, c int64) {
		x, y := big.NewInt(a), big.NewInt(b)
		if got, want := SatAdd(a, b), clamp(new(big.Int).Add(x, y)); got != want {
			t.Fatalf("SatAdd(%d, %d) = %d, want %d", a, b, got, want)
		}
		if got, want := SatSub(a, b), clamp(new(big.Int).Sub(x, y)); got != want {
			t.Fatalf("SatSub(%d, %d) = %d, want %d", a, b, got, want)
		}
		if got, want := SatMul(a, b), clamp(new(big.Int).Mul(x, y)); got != want {
			t.Fatalf("SatMul(%d, %d) = %d, want %d", a, b, got, want)
		}
		var s Sum
		exact := new(big.Int)
		for _, n := range []int64{a, b, c} {
			s.Add(n)
			exact.Add(exact, big.NewInt(int64(amount(n))))
		}
		if got, want := s.Int64(), clamp(exact); got != want || got < 0 {
			t.Fatalf("Sum of %d, %d, %d = %d, want %d", a, b, c, got, want)
		}
		s.Sub(b)
		exact.Sub(exact, big.NewInt(int64(amount(b))))
		if got, want := s.Int64(), clamp(exact); got != want {
			t.Fatalf("Sum of %d, %d, %d less %d = %d, want %d", a, b, c, b, got, want)
		}
	})
}
