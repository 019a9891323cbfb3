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

// RunsToSeparate is the normal-approximation estimate of the runs per side a fixed design
// needs to tell pass rates pa and pb apart with a two-sided z test at level alpha and the
// given power: (z_{1-alpha/2} + z_power)² (pa(1-pa) + pb(1-pb)) / (pa - pb)². It is an
// estimate from observed rates, not a promise; ok is false when the rates are equal.
func RunsToSeparate(pa, pb, alpha, power float64) (n int, ok bool) {
	if pa == pb {
		return 0, false
	}
	z := Z(alpha) + Z(2*(1-power)) // Z is two-sided: Z(2(1-power)) is power's one-sided quantile
	v := pa*(1-pa) + pb*(1-pb)
	// Rates of 0 and 1 have no variance: at least one run each is still needed.
	return max(1, int(math.Ceil(z*z*v/((pa-pb)*(pa-pb))))), true
}
