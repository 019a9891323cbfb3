package stats

import "math"

// PassK estimates pass^k, the chance that k fresh runs of the same task all pass, from x
// passes in n runs: C(x,k)/C(n,k), which is unbiased for p^k (pass rate to the k-th power,
// as tau-bench defines it), unlike (x/n)^k. ok is false when k > n: n runs cannot say.
func PassK(x, n, k int) (est float64, ok bool) {
	if k < 1 || k > n || x < 0 || x > n {
		return 0, false
	}
	est = 1
	for i := range k {
		est *= float64(x-i) / float64(n-i)
	}
	return math.Max(0, est), true
}

// FlipRate is how often two runs of the same task disagree (one passes, the other fails),
// over every pair of the n runs of which x passed: 2x(n-x)/(n(n-1)), unbiased for 2p(1-p).
// ok is false with fewer than two runs.
func FlipRate(x, n int) (rate float64, ok bool) {
	if n < 2 || x < 0 || x > n {
		return 0, false
	}
	return 2 * float64(x) * float64(n-x) / (float64(n) * float64(n-1)), true
}
