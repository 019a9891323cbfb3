package stats

import "math"

// MeanInterval is a confidence interval, at level 1 - alpha, for the mean of n independent
// values in [-1, 1] drawn from one distribution (the effects of several pairs of swap
// originals), and whether it refutes a mean of zero. It is the hedged-capital betting
// interval of Waudby-Smith and Ramdas ("Estimating means of bounded random variables by
// betting", JRSS B 2024, section 4) with its bets tuned for a fixed n (their predictable
// plug-in): valid for any n and any distribution on [-1, 1], with no normal approximation,
// so with few values it is wide, as it must be (no interval that assumes nothing can call a
// mean different from zero at alpha from fewer than about log2(1/alpha) values). The values
// are bet on in the order given.
func MeanInterval(xs []float64, alpha float64) (lo, hi float64, refutesZero bool) {
	if len(xs) == 0 {
		return -1, 1, false
	}
	refuted := func(m float64) bool { return hedgedCapital(xs, m, alpha) >= 1/alpha }
	refutesZero = refuted(0)
	lo, hi = 1, -1
	const grid = 400
	for i := 0; i <= grid; i++ {
		m := -1 + 2*float64(i)/grid
		if !refuted(m) {
			lo, hi = math.Min(lo, m), math.Max(hi, m)
		}
	}
	if lo > hi {
		return -1, 1, refutesZero
	}
	// A grid point stands for the values up to the next one: widen by a step, but never
	// across zero when zero itself is refuted, nor to take zero in when it is not.
	step := 2.0 / grid
	lo, hi = math.Max(-1, lo-step), math.Min(1, hi+step)
	switch {
	case refutesZero && lo <= 0 && hi >= 0 && lo > -step:
		lo = math.Nextafter(0, 1)
	case refutesZero && lo <= 0 && hi >= 0 && hi < step:
		hi = math.Nextafter(0, -1)
	case !refutesZero:
		lo, hi = math.Min(lo, 0), math.Max(hi, 0)
	}
	return lo, hi, refutesZero
}

// hedgedCapital is the capital, after betting on every value, of a gambler who splits her
// money between betting the mean is above m and below it: under a mean of m it is a
// nonnegative martingale starting at 1, so it reaches 1/alpha with probability at most alpha.
func hedgedCapital(xs []float64, m, alpha float64) float64 {
	n := float64(len(xs))
	mu := (m + 1) / 2 // the values and the mean on [0, 1]
	const c = 0.9     // the largest share of the capital that can be lost on one bet
	up, down := 0.5, 0.5
	sum, sq := 0.5, 0.25 // a phantom value of one half: the running mean and variance start there
	for i, x := range xs {
		y := (x + 1) / 2
		t := float64(i + 1)
		mean := sum / t
		variance := sq / t
		lam := math.Sqrt(2 * math.Log(2/alpha) / (n * math.Max(variance, 1e-6)))
		up *= 1 + math.Min(lam, c/math.Max(mu, 1e-12))*(y-mu)
		down *= 1 - math.Min(lam, c/math.Max(1-mu, 1e-12))*(y-mu)
		sum += y
		sq += (y - mean) * (y - mean)
	}
	return up + down
}
