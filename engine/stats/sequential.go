package stats

import "math"

// Sequential decides, run by run, whether two sides' pass rates are separated, in a way that
// stays valid however often it is looked at and whenever the looks stop. Repeated Wilson
// intervals are not: checking them after every run and stopping at the first separation
// declares equal sides different far more often than 5% of the time.
//
// It is a test by betting (Waudby-Smith and Ramdas, "Estimating means of bounded random
// variables by betting", JRSS B 2024): the runs come in pairs, one per side, and each pair's
// difference D = a - b lies in [-1, 1] with mean Δ = pa - pb. For each hypothesised Δ = m, a
// gambler bets a fraction λ of her capital on D - m, with λ chosen from the pairs before
// only; if Δ really is m her capital is a nonnegative martingale, so by Ville's inequality it
// reaches 1/α with probability at most α, ever. The sides are separated when the capital
// against m = 0 reaches 1/α; the values of m whose capital stays below 1/α form a confidence
// sequence for Δ.
type Sequential struct {
	// Alpha is the error allowed over the whole sequence, 0.05 for 95%.
	Alpha float64

	diffs []float64 // every pair's difference, for the interval
	zero  bettor    // the bets against Δ = 0, kept up to date for Separated
}

// bettor is one gambler's capital against Δ = m with aGRAPA bets (the approximate
// growth-rate-optimal plug-in of Waudby-Smith and Ramdas): λ = μ/(σ² + μ²) from the pairs
// before, μ and σ² the running mean and variance of D - m shrunk towards zero by one phantom
// pair. A signed λ bets in whichever direction the pairs so far point, so one capital tests
// both Δ > m and Δ < m.
type bettor struct {
	m         float64
	n         int
	sum, sq   float64 // of D - m
	logWealth float64
}

// truncate keeps each bet at most this share of the largest that cannot ruin the gambler.
const truncate = 0.8

func (b *bettor) add(d float64) {
	x := d - b.m
	t := float64(b.n + 1)
	mean := b.sum / t
	variance := (0.25 + b.sq - b.sum*b.sum/t) / t
	lam := mean / (variance + mean*mean)
	// 1 + λ(D - m) >= 0 for every D in [-1, 1] needs -1/(1-m) <= λ <= 1/(1+m).
	lam = math.Max(-truncate/(1-b.m), math.Min(truncate/(1+b.m), lam))
	b.logWealth += math.Log1p(lam * x)
	b.n++
	b.sum += x
	b.sq += x * x
}

// NewSequential starts a sequence at the given error level.
func NewSequential(alpha float64) *Sequential {
	return &Sequential{Alpha: alpha}
}

// Add takes one pair of runs, a from the first side and b from the second, each 1 for a pass
// and 0 for a fail.
func (s *Sequential) Add(a, b int) {
	d := float64(a - b)
	s.diffs = append(s.diffs, d)
	s.zero.add(d)
}

// Pairs is how many pairs were added.
func (s *Sequential) Pairs() int { return len(s.diffs) }

// Separated says whether Δ = 0 is refuted: the sides' pass rates differ, at the sequence's
// level, whenever this is first looked at.
func (s *Sequential) Separated() bool { return s.zero.logWealth >= math.Log(1/s.Alpha) }

// seqGrid is how finely Interval resolves Δ: the midpoints of seqGrid cells of [-1, 1].
const seqGrid = 200

// Interval is the confidence sequence's range for Δ = pa - pb now: every value on a grid of
// [-1, 1] that the pairs so far have not refuted, widened by half a grid cell on each side
// (the values between grid points are not tested), and holding 0 unless Separated. It
// replays the pairs, so it is for reports, not for every pair.
func (s *Sequential) Interval() (lo, hi float64) {
	if len(s.diffs) == 0 {
		return -1, 1
	}
	lo, hi = 1, -1
	for i := range seqGrid {
		b := bettor{m: -1 + (2*float64(i)+1)/seqGrid}
		for _, d := range s.diffs {
			b.add(d)
		}
		if b.logWealth < math.Log(1/s.Alpha) {
			lo, hi = math.Min(lo, b.m), math.Max(hi, b.m)
		}
	}
	if lo > hi { // every grid value refuted: the truth lies between two grid points
		return -1, 1
	}
	// Δ = 0 lies between two grid points, and Separated tests it itself: the interval and
	// Separated must not disagree about it.
	if !s.Separated() {
		lo, hi = math.Min(lo, 0), math.Max(hi, 0)
	}
	// A grid point stands for its cell: a value between two kept points, or up to half a
	// cell beyond the outermost, was not tested and may be the truth.
	half := 1.0 / seqGrid
	lo, hi = math.Max(-1, lo-half), math.Min(1, hi+half)
	// ... but not across 0 once 0 itself is refuted.
	if s.Separated() && lo > -half {
		lo = math.Max(lo, 0)
	}
	if s.Separated() && hi < half {
		hi = math.Min(hi, 0)
	}
	return lo, hi
}
