package stats

import (
	"math"
	"sync"
)

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
	return MoverOn(terms, func(x, n int) (float64, float64) { return WilsonZ(x, n, z) })
}

// MoverOn is Mover built on the given interval of each rate instead of Wilson's.
func MoverOn(terms []Term, interval func(x, n int) (lo, hi float64)) (est, lo, hi float64, ok bool) {
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
		l, u := interval(t.X, t.N)
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

// ClopperPearson is the exact interval for x passes out of n that leaves out at most alpha:
// the rates under which what was seen, or anything further out, has probability alpha/2 on
// each side. Wider than Wilson's; with few tails a cell, MOVER on Wilson intervals calls
// zero effects distinguishable far more often than its level says, and on these it does not.
func ClopperPearson(x, n int, alpha float64) (lo, hi float64) {
	if n == 0 {
		return 0, 1
	}
	key := cpKey{x, n, alpha}
	if v, ok := cpCache.Load(key); ok {
		b := v.([2]float64)
		return b[0], b[1]
	}
	defer func() { cpCache.Store(key, [2]float64{lo, hi}) }()
	// P(X >= x | p) grows with p, P(X <= x | p) falls: bisection finds each bound.
	solve := func(f func(p float64) float64, rising bool) float64 {
		a, b := 0.0, 1.0
		for range 60 {
			m := (a + b) / 2
			if (f(m) < alpha/2) == rising {
				a = m
			} else {
				b = m
			}
		}
		return (a + b) / 2
	}
	lo, hi = 0, 1
	if x > 0 {
		lo = solve(func(p float64) float64 { return 1 - binomCDF(x-1, n, p) }, true)
	}
	if x < n {
		hi = solve(func(p float64) float64 { return binomCDF(x, n, p) }, false)
	}
	return lo, hi
}

// cpKey and cpCache keep the intervals already solved: a swap's table and the app's redraws
// ask for the same few counts again and again.
type cpKey struct {
	x, n  int
	alpha float64
}

var cpCache sync.Map

// binomCDF is P(X <= k) for X binomial(n, p).
func binomCDF(k, n int, p float64) float64 {
	if p <= 0 {
		return 1
	}
	if p >= 1 {
		if k >= n {
			return 1
		}
		return 0
	}
	ln, _ := math.Lgamma(float64(n + 1))
	sum := 0.0
	for i := 0; i <= k; i++ {
		li, _ := math.Lgamma(float64(i + 1))
		lr, _ := math.Lgamma(float64(n - i + 1))
		sum += math.Exp(ln - li - lr + float64(i)*math.Log(p) + float64(n-i)*math.Log1p(-p))
	}
	return math.Min(1, sum)
}
