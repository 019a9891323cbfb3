package stats

// Diff is the difference of two pass rates, a - b, with Newcombe's hybrid score interval at
// 95% (his method 10, built from the two Wilson intervals): honest for small samples and for
// rates near 0 or 1, where the textbook normal interval is too narrow or leaves [-1, 1].
func Diff(xa, na, xb, nb int) (d, lo, hi float64) {
	d, lo, hi, _ = Mover([]Term{{1, xa, na}, {-1, xb, nb}}, z95)
	return d, lo, hi
}

// Distinguishable says whether a difference's interval excludes zero.
func Distinguishable(lo, hi float64) bool { return lo > 0 || hi < 0 }
