package stats

import "math"

// Z is the two-sided standard normal quantile for an interval that leaves out alpha in all:
// 1.96 for alpha = 0.05.
func Z(alpha float64) float64 { return math.Sqrt2 * math.Erfinv(1-alpha) }

// Bonferroni is the z of each of m intervals that together leave out at most alpha: each is
// made at level 1 - alpha/m, so the chance that any of the m misses (or that any of m calls
// "distinguishable from zero" is made where the truth is zero) is at most alpha, whatever the
// intervals' dependence. No calls at all is one interval's z.
func Bonferroni(alpha float64, m int) float64 { return Z(alpha / float64(max(1, m))) }

// Term is one pass rate in a linear combination: Coef times X passes out of N.
type Term struct {
	Coef float64
	X, N int
}

// Mover is a linear combination of independent pass rates, Σ Coef·X/N, with its MOVER
// interval (method of variance estimates recovery, Zou and Donner 2008; Zou, Huang and Zhang
// 2009 for linear combinations) built on each rate's Wilson interval at z: the distance from
// the estimate to each bound is the root of the summed squared distances of the terms to the
// bounds that push it that way. For a - b it is Newcombe's hybrid score interval (Diff); for
// the mean of several differences it weighs each difference equally, whatever the counts
// behind each rate. ok is false when a term has no verdicts (N = 0): the combination is not
// measured, and the interval is the whole range the coefficients allow.
func Mover(terms []Term, z float64) (est, lo, hi float64, ok bool) {
	var floor, ceil, down, up float64
	ok = true
	for _, t := range terms {
		floor += math.Min(0, t.Coef)
		ceil += math.Max(0, t.Coef)
		if t.N == 0 {
			ok = false
			continue
		}
		p := float64(t.X) / float64(t.N)
		l, u := WilsonZ(t.X, t.N, z)
		est += t.Coef * p
		// A positive coefficient lowers the combination when the rate is at its lower bound;
		// a negative one when it is at its upper bound.
		below, above := p-l, u-p
		if t.Coef < 0 {
			below, above = above, below
		}
		c := math.Abs(t.Coef)
		down += c * c * below * below
		up += c * c * above * above
	}
	if !ok {
		return 0, floor, ceil, false
	}
	return est, math.Max(floor, est-math.Sqrt(down)), math.Min(ceil, est+math.Sqrt(up)), true
}
