package fewest

import (
	"math/rand/v2"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
)

func TestChoose(t *testing.T) {
	sum := func(w []int, need int) func([]int) bool {
		return func(idx []int) bool {
			s := 0
			for _, i := range idx {
				s += w[i]
			}
			return s >= need
		}
	}
	cases := []struct {
		name    string
		weights []int
		need    int
		want    []int
	}{
		{"none", nil, 1, nil},
		{"not enough in all", []int{1, 1}, 3, nil},
		{"the first that suffices", []int{2, 2}, 2, []int{0}},
		{"the fewest, though later", []int{1, 1, 2}, 2, []int{2}},
		{"the first pair in order", []int{1, 1, 1}, 2, []int{0, 1}},
		{"all", []int{1, 1, 1}, 3, []int{0, 1, 2}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(Choose(len(tc.weights), sum(tc.weights, tc.need))).To(Equal(tc.want))
		})
	}
}

// TestChooseIsTheFewestAndFirst checks Choose against every subset on
// random weights: what it returns suffices, no smaller set does, and no
// set as small earlier in lexicographic order does. Past the budget (many
// candidates) it still returns a set that suffices, from which no one can
// be given back.
func TestChooseIsTheFewestAndFirst(t *testing.T) {
	for seed := range uint64(2000) {
		rng := rand.New(rand.NewPCG(seed, 11))
		n := rng.IntN(9)
		if seed%10 == 0 {
			n = 20 + rng.IntN(20) // past the budget
		}
		w := make([]int, n)
		for i := range w {
			w[i] = rng.IntN(5)
		}
		need := 1 + rng.IntN(11) // the empty set never suffices (Choose's callers ask only then)
		ok := func(idx []int) bool {
			s := 0
			for _, i := range idx {
				s += w[i]
			}
			return s >= need
		}
		got := Choose(n, ok)
		all := make([]int, n)
		for i := range all {
			all[i] = i
		}
		if !ok(all) {
			if got != nil {
				t.Fatalf("seed %d: %v although all do not suffice", seed, got)
			}
			continue
		}
		if !ok(got) || !slices.IsSorted(got) {
			t.Fatalf("seed %d: %v does not suffice or is not ascending", seed, got)
		}
		for i := range got {
			rest := slices.Delete(slices.Clone(got), i, i+1)
			if ok(rest) {
				t.Fatalf("seed %d: %v suffices without %d", seed, got, got[i])
			}
		}
		if n > 12 {
			continue
		}
		for mask := range 1 << n {
			var set []int
			for i := range n {
				if mask&(1<<i) != 0 {
					set = append(set, i)
				}
			}
			if !ok(set) {
				continue
			}
			if len(set) < len(got) || len(set) == len(got) && slices.Compare(set, got) < 0 {
				t.Fatalf("seed %d: %v suffices and comes before %v", seed, set, got)
			}
		}
	}
}
