package stats

import "math"

// Diff is the difference of two pass rates, a - b, with Newcombe's hybrid score interval at
// 95% (his method 10, built from the two Wilson intervals): honest for small samples and for
// rates near 0 or 1, where the textbook normal interval is too narrow or leaves [-1, 1].
func Diff(xa, na, xb, nb int) (d, lo, hi float64) {
	if na == 0 || nb == 0 {
		return 0, -1, 1
	}
	pa, pb := float64(xa)/float64(na), float64(xb)/float64(nb)
	la, ua := Wilson(xa, na)
	lb, ub := Wilson(xb, nb)
	d = pa - pb
	lo = d - math.Sqrt((pa-la)*(pa-la)+(ub-pb)*(ub-pb))
	hi = d + math.Sqrt((ua-pa)*(ua-pa)+(pb-lb)*(pb-lb))
	return d, math.Max(-1, lo), math.Min(1, hi)
}

// Distinguishable says whether a difference's 95% interval excludes zero.
func Distinguishable(lo, hi float64) bool { return lo > 0 || hi < 0 }
