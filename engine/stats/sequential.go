package stats

import "math"

// ConfSeq is a confidence sequence for the mean of a variable bounded in [Lo, Hi]: a range
// that holds the true mean at every look at once with chance at least 1 - Alpha, so it stays
// valid however often it is looked at and whenever the looks stop (anytime-valid). A fixed-n
// interval looked at after every run, or at a stop the data chose, is not.
//
// It is built by betting (Waudby-Smith and Ramdas, "Estimating means of bounded random
// variables by betting", JRSS B 2024): for each hypothesised mean m, a gambler bets a
// fraction λ of her capital on X - m, with λ chosen from the values before only; if the mean
// really is m her capital is a nonnegative martingale, so by Ville's inequality it reaches
// 1/α with probability at most α, ever. The values of m whose capital has stayed below 1/α
// at every value so far form the confidence sequence (a value refuted once stays refuted:
// the capital of the true mean reaches 1/α at any time with chance at most α).
type ConfSeq struct {
	// Alpha is the error allowed over the whole sequence, 0.05 for 95%.
	Alpha float64
	// Lo and Hi bound every value: [0, 1] for a pass rate, [-1, 1] for a difference of two.
	Lo, Hi float64

	xs []float64
}

// NewConfSeq starts a confidence sequence at error alpha for a mean of values in [lo, hi].
func NewConfSeq(alpha, lo, hi float64) *ConfSeq { return &ConfSeq{Alpha: alpha, Lo: lo, Hi: hi} }

// Add takes one value.
func (c *ConfSeq) Add(x float64) { c.xs = append(c.xs, x) }

// bettor is one gambler's capital against mean m with aGRAPA bets (the approximate
// growth-rate-optimal plug-in of Waudby-Smith and Ramdas): λ = μ/(σ² + μ²) from the values
// before, μ and σ² the running mean and variance of X - m shrunk towards zero by one phantom
// value. A signed λ bets in whichever direction the values so far point, so one capital
// tests both "above m" and "below m".
type bettor struct {
	m, lo, hi float64
	n         int
	sum, sq   float64 // of X - m
	logWealth float64
}

// truncate keeps each bet at most this share of the largest that cannot ruin the gambler.
const truncate = 0.8

func (b *bettor) add(x float64) {
	d := x - b.m
	t := float64(b.n + 1)
	mean := b.sum / t
	half := (b.hi - b.lo) / 2
	variance := (0.25*half*half + b.sq - b.sum*b.sum/t) / t
	lam := mean / (variance + mean*mean)
	// 1 + λ(X - m) >= 0 for every X in [lo, hi] needs -1/(hi-m) <= λ <= 1/(m-lo).
	lam = math.Max(-truncate/(b.hi-b.m), math.Min(truncate/(b.m-b.lo), lam))
	b.logWealth += math.Log1p(lam * d)
	b.n++
	b.sum += d
	b.sq += d * d
}

// csGrid is how finely Interval resolves the mean: the midpoints of csGrid cells of [Lo, Hi].
const csGrid = 200

// Interval is the confidence sequence's range for the mean now: from the lowest to the
// highest value on a grid of [Lo, Hi] that no value so far has refuted, widened by a grid
// cell on each side (the values between grid points are not tested). A value refuted stays
// refuted, so each range lies within the one before. It replays the
// values, so it is for reports, not for every value.
func (c *ConfSeq) Interval() (lo, hi float64) {
	if len(c.xs) == 0 {
		return c.Lo, c.Hi
	}
	cell := (c.Hi - c.Lo) / csGrid
	at := func(i int) float64 { return c.Lo + (float64(i)+0.5)*cell }
	// Only the outermost unrefuted values matter: scan in from each end. A value far from
	// the mean is refuted within a few values, so this costs little more than two replays.
	first := -1
	for i := range csGrid {
		if !c.refuted(at(i)) {
			first = i
			break
		}
	}
	if first < 0 { // every grid value refuted: the truth lies between two grid points
		return c.Lo, c.Hi
	}
	last := first
	for i := csGrid - 1; i > first; i-- {
		if !c.refuted(at(i)) {
			last = i
			break
		}
	}
	// The values between the outermost kept point and the next, refuted, one were not
	// tested and may be the truth: the range reaches to that next point.
	return math.Max(c.Lo, at(first)-cell), math.Min(c.Hi, at(last)+cell)
}

// refuted says whether the capital against mean m has reached 1/Alpha at some value so far.
func (c *ConfSeq) refuted(m float64) bool {
	b := bettor{m: m, lo: c.Lo, hi: c.Hi}
	for _, x := range c.xs {
		if b.add(x); b.logWealth >= math.Log(1/c.Alpha) {
			return true
		}
	}
	return false
}
