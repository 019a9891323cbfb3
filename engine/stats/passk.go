package stats

import "math"

// PassKInterval is a 95% interval for pass^k from x passes in n runs: the exact
// (Clopper-Pearson) interval of the pass rate p raised to k. p -> p^k is increasing, so the
// interval holds p^k exactly when the rate's holds p: at least 95% of the time. ok is false
// when k > n (the point estimate C(x,k)/C(n,k) needs k runs; PassK says so too).
func PassKInterval(x, n, k int) (lo, hi float64, ok bool) {
	if k < 1 || k > n || x < 0 || x > n {
		return 0, 0, false
	}
	plo, phi := ClopperPearson(x, n, 0.05)
	return math.Pow(plo, float64(k)), math.Pow(phi, float64(k)), true
}

// FlipRateInterval is a 95% interval for the flip rate 2p(1-p) from x passes in n runs: the
// image of the exact interval of p, whose top is 0.5 when that interval holds p = 1/2 (the
// flip rate is not monotone in p). It holds 2p(1-p) whenever the rate's interval holds p.
// ok is false with fewer than two runs.
func FlipRateInterval(x, n int) (lo, hi float64, ok bool) {
	if n < 2 || x < 0 || x > n {
		return 0, 0, false
	}
	plo, phi := ClopperPearson(x, n, 0.05)
	f := func(p float64) float64 { return 2 * p * (1 - p) }
	lo, hi = math.Min(f(plo), f(phi)), math.Max(f(plo), f(phi))
	if plo <= 0.5 && phi >= 0.5 {
		hi = 0.5
	}
	return lo, hi, true
}
