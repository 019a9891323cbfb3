package stats

import "math"

// A Combination is a linear combination of independent pass rates, Σ Coefs[i]·X_i/Ns[i], as
// swap's effects are (the mean of two differences of four cells), called "distinguishable
// from zero" when its MOVER interval on each rate's exact interval at Alpha excludes zero
// (MoverOn with ClopperPearson). Its methods answer what a design of this size can tell,
// by going through every count the cells could hold: exactly, with no simulation.
type Combination struct {
	Coefs []float64
	Ns    []int
	Alpha float64
}

// cell is one rate's possible counts: for each x in 0..n, the rate and the distances from it
// to its exact interval's bounds.
type cell struct{ p, below, above []float64 }

func (c Combination) cells() []cell {
	cells := make([]cell, len(c.Ns))
	for i, n := range c.Ns {
		cl := cell{make([]float64, n+1), make([]float64, n+1), make([]float64, n+1)}
		for x := 0; x <= n; x++ {
			lo, hi := ClopperPearson(x, n, c.Alpha)
			p := float64(x) / float64(n)
			cl.p[x], cl.below[x], cl.above[x] = p, p-lo, hi-p
		}
		cells[i] = cl
	}
	return cells
}

// each calls f with every count the cells could hold, the combination's estimate and whether
// its interval excludes zero, exactly as MoverOn computes it.
func (c Combination) each(f func(xs []int, est float64, called bool)) bool {
	if len(c.Coefs) != len(c.Ns) || len(c.Ns) == 0 {
		return false
	}
	var floor, ceil float64
	for i, n := range c.Ns {
		if n < 1 {
			return false
		}
		floor += math.Min(0, c.Coefs[i])
		ceil += math.Max(0, c.Coefs[i])
	}
	cells := c.cells()
	xs := make([]int, len(c.Ns))
	var walk func(i int, est, down, up float64)
	walk = func(i int, est, down, up float64) {
		if i == len(xs) {
			lo, hi := math.Max(floor, est-math.Sqrt(down)), math.Min(ceil, est+math.Sqrt(up))
			f(xs, est, Distinguishable(lo, hi))
			return
		}
		k := c.Coefs[i]
		for x := range cells[i].p {
			below, above := cells[i].below[x], cells[i].above[x]
			if k < 0 {
				below, above = above, below
			}
			xs[i] = x
			walk(i+1, est+k*cells[i].p[x], down+k*k*below*below, up+k*k*above*above)
		}
	}
	walk(0, 0, 0, 0)
	return true
}

// SmallestCall is the smallest size of estimate that cells of these sizes can call
// distinguishable from zero: below it no count is ever called, whatever the truth. ok is
// false when no count at all is called (too few verdicts to call anything) or a cell is
// empty. It is what a non-call can rule out: nothing about effects smaller than this.
func (c Combination) SmallestCall() (d float64, ok bool) {
	d = math.Inf(1)
	if !c.each(func(_ []int, est float64, called bool) {
		if called && math.Abs(est) < d {
			d = math.Abs(est)
		}
	}) || math.IsInf(d, 1) {
		return 0, false
	}
	return d, true
}

// Power is the exact probability that the combination is called, with the sign of the
// truth, when cell i's true rate is ps[i]; a truth of zero gives the probability of a
// (false) call of either sign.
func (c Combination) Power(ps []float64) float64 {
	if len(ps) != len(c.Ns) {
		return 0
	}
	truth := 0.0
	pmf := make([][]float64, len(c.Ns))
	for i, n := range c.Ns {
		truth += c.Coefs[i] * ps[i]
		pmf[i] = binomPMF(n, ps[i])
	}
	power := 0.0
	c.each(func(xs []int, est float64, called bool) {
		if !called || (truth > 1e-12 && est <= 0) || (truth < -1e-12 && est >= 0) {
			return
		}
		pr := 1.0
		for i, x := range xs {
			pr *= pmf[i][x]
		}
		power += pr
	})
	return power
}

// binomPMF is P(X = x) for x in 0..n, X binomial(n, p).
func binomPMF(n int, p float64) []float64 {
	out := make([]float64, n+1)
	switch {
	case p <= 0:
		out[0] = 1
		return out
	case p >= 1:
		out[n] = 1
		return out
	}
	ln, _ := math.Lgamma(float64(n + 1))
	for x := 0; x <= n; x++ {
		lx, _ := math.Lgamma(float64(x + 1))
		lr, _ := math.Lgamma(float64(n - x + 1))
		out[x] = math.Exp(ln - lx - lr + float64(x)*math.Log(p) + float64(n-x)*math.Log1p(-p))
	}
	return out
}
