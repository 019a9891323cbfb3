package journal

import "math"

// Wilson is the Wilson score interval at 95% for x passes out of n: a pass rate's range
// that stays inside [0, 1] and is honest for small n and for rates near 0 or 1.
func Wilson(x, n int) (lo, hi float64) {
	if n == 0 {
		return 0, 1
	}
	const z = 1.959963984540054
	p := float64(x) / float64(n)
	nf := float64(n)
	den := 1 + z*z/nf
	mid := (p + z*z/(2*nf)) / den
	half := z * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf)) / den
	return math.Max(0, mid-half), math.Min(1, mid+half)
}
