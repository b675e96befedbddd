// Package fewest finds the fewest items, among candidates in an order of
// preference, whose choice satisfies a predicate: the victims of a
// preemption (the GPU gate's, admission.Preempt, and a TenantQuota's,
// quota.PreemptFor). The search is exact and bounded: sets are tried by
// size, and within one size in lexicographic order of the candidates, so
// the first that satisfies is the smallest and, among sets as small, the
// most preferred; past the budget it falls back to taking candidates in
// order until the predicate holds, then giving back, from the last taken,
// each one it holds without.
package fewest

// Budget is the most sets the exact search tries.
const Budget = 1024

// Choose returns the indices (ascending) of the fewest of n candidates
// for which ok holds, nil when ok does not hold even for all of them. The
// caller has found that ok does not hold for none.
// ok is given the indices ascending; it need not be monotone, but the
// greedy fallback assumes that more chosen never hurts much.
func Choose(n int, ok func([]int) bool) []int {
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	if n == 0 || !ok(all) {
		return nil
	}
	tried := 0
	for k := 1; k <= n && tried < Budget; k++ {
		var found []int
		subsets(n, k, func(idx []int) bool {
			if tried++; tried > Budget {
				return true
			}
			if ok(idx) {
				found = append([]int(nil), idx...)
				return true
			}
			return false
		})
		if found != nil {
			return found
		}
	}
	return greedy(n, ok)
}

// greedy takes candidates in order until ok holds, then gives back, from
// the last taken, each one ok holds without.
func greedy(n int, ok func([]int) bool) []int {
	var taken []int
	for i := range n {
		taken = append(taken, i)
		if ok(taken) {
			break
		}
	}
	for i := len(taken) - 1; i >= 0; i-- {
		rest := append(append([]int(nil), taken[:i]...), taken[i+1:]...)
		if ok(rest) {
			taken = rest
		}
	}
	return taken
}

// subsets calls f with every k-subset of 0..n-1 in lexicographic order
// until f returns true.
func subsets(n, k int, f func([]int) bool) {
	idx := make([]int, k)
	for i := range idx {
		idx[i] = i
	}
	for !f(idx) {
		i := k - 1
		for i >= 0 && idx[i] == n-k+i {
			i--
		}
		if i < 0 {
			return
		}
		idx[i]++
		for j := i + 1; j < k; j++ {
			idx[j] = idx[j-1] + 1
		}
	}
}
