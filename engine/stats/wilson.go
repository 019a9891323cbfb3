// Package stats holds the statistics tare's analyses share: intervals for pass rates and
// their differences, over runs and over a set of tasks, and the sequential tests that
// separate two sides. It is pure: no I/O, no randomness of its own.
package stats

import "math"

// z95 is the standard normal quantile for a two-sided 95% interval.
const z95 = 1.959963984540054

// Wilson is the Wilson score interval at 95% for x passes out of n: a pass rate's range
// that stays inside [0, 1] and is honest for small n and for rates near 0 or 1.
func Wilson(x, n int) (lo, hi float64) { return WilsonZ(x, n, z95) }

// WilsonZ is the Wilson score interval at the level whose two-sided normal quantile is z
// (see Z).
func WilsonZ(x, n int, z float64) (lo, hi float64) {
	if n == 0 {
		return 0, 1
	}
	p := float64(x) / float64(n)
	nf := float64(n)
	den := 1 + z*z/nf
	mid := (p + z*z/(2*nf)) / den
	half := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / den
	return math.Max(0, mid-half), math.Min(1, mid+half)
}
