package stats

import (
	"fmt"
	"math"
	"sync"
)

// SignBoundary is an exact sequential test that two sides pass a task equally often, from
// runs taken in pairs (one per side) and looked at after every pair, with at most MaxPairs
// pairs.
//
// Only the discordant pairs (one side passed, the other failed) carry evidence: when the
// rates are equal, whatever they are, a discordant pair is a's pass with chance 1/2, like a
// fair coin (the sequential McNemar, or sign, test). S is a's discordant passes minus b's
// over the K discordant pairs so far; the test separates the sides the first time |S| reaches
// the boundary b(K), about Z√K (a Pocock-type boundary: the same nominal level at every look).
//
// Z is the smallest for which the chance of ever reaching the boundary within MaxPairs pairs
// is at most Alpha, computed exactly (not simulated, not bounded by Ville's inequality over
// an infinite horizon, which would spend only part of the 5% by the cap): the chance of a
// discordant pair is pa(1-pb) + pb(1-pa) = 2p(1-p) <= 1/2 at equal rates p, the coin flips
// are independent of which pairs are discordant, and more discordant pairs give more chances
// to cross, so the least favourable case is p = 1/2, K ~ Binomial(MaxPairs, 1/2). Error is
// that least favourable chance: at every other common rate the error is lower.
type SignBoundary struct {
	// MaxPairs is the most pairs the sequence may take: the cap the test is calibrated to.
	MaxPairs int
	// Alpha is the error allowed within MaxPairs pairs.
	Alpha float64
	// Z is the boundary's height over √K.
	Z float64
	// Error is the exact chance, at equal rates of 1/2 (the least favourable), that the test
	// ever separates the sides within MaxPairs pairs: at most Alpha.
	Error float64

	b []int // b[k] is the |S| that separates after k discordant pairs; b[0] is never reached
}

// MaxSignPairs is the largest cap NewSignBoundary calibrates: its exact computation grows as
// the cap to the power 1.5, and no comparison of agents needs more runs than this.
const MaxSignPairs = 10000

var (
	boundaryMu    sync.Mutex
	boundaryCache = map[[2]float64]*SignBoundary{}
)

// NewSignBoundary is the boundary calibrated to maxPairs pairs at error alpha (0 < alpha <
// 1/2, 1 <= maxPairs <= MaxSignPairs). Boundaries are computed once per cap and kept.
func NewSignBoundary(maxPairs int, alpha float64) (*SignBoundary, error) {
	if maxPairs < 1 || maxPairs > MaxSignPairs {
		return nil, fmt.Errorf("a sign test over %d pairs: want 1 to %d", maxPairs, MaxSignPairs)
	}
	if !(alpha > 0 && alpha < 0.5) {
		return nil, fmt.Errorf("a sign test at error %v: want between 0 and 0.5", alpha)
	}
	key := [2]float64{float64(maxPairs), alpha}
	boundaryMu.Lock()
	defer boundaryMu.Unlock()
	if sb := boundaryCache[key]; sb != nil {
		return sb, nil
	}
	// The error falls as Z rises (a higher boundary is crossed less often): bisect for the
	// lowest Z whose error is within alpha. At Z = 0 every discordant pair crosses; at
	// Z = 40 no pair within MaxSignPairs can (40√K > K).
	lo, hi := 0.0, 40.0
	for range 60 {
		mid := (lo + hi) / 2
		if signBoundary(maxPairs, mid).NullError() <= alpha {
			hi = mid
		} else {
			lo = mid
		}
	}
	sb := signBoundary(maxPairs, hi)
	sb.Alpha, sb.Error = alpha, sb.NullError()
	boundaryCache[key] = sb
	return sb, nil
}

// signBoundary is the boundary of height z over n pairs: ⌈z√k⌉, rising by at most one per
// discordant pair. That last keeps the test monotone: a pass instead of a fail on a's side
// can never turn a's separation into none, which the worst-and-best-case rule for runs
// without a verdict relies on.
func signBoundary(n int, z float64) *SignBoundary {
	b := make([]int, n+1)
	b[0] = math.MaxInt32
	for k := 1; k <= n; k++ {
		b[k] = max(1, int(math.Ceil(z*math.Sqrt(float64(k))-1e-9)))
		if k > 1 {
			b[k] = min(b[k], b[k-1]+1)
		}
	}
	return &SignBoundary{MaxPairs: n, Z: z, b: b}
}

// Crosses says whether S after k discordant pairs separates the sides: +1 for a ahead, -1
// for b ahead, 0 for not.
func (sb *SignBoundary) Crosses(s, k int) int {
	if k < 1 || k > sb.MaxPairs {
		return 0
	}
	switch {
	case s >= sb.b[k]:
		return 1
	case -s >= sb.b[k]:
		return -1
	}
	return 0
}

// crossedBy is, for k = 0..MaxPairs, the exact chance that a walk of k discordant pairs,
// each a's with chance theta, has reached the boundary by its k-th step.
func (sb *SignBoundary) crossedBy(theta float64) []float64 {
	n := sb.MaxPairs
	off := n + 1
	alive, next := make([]float64, 2*off+1), make([]float64, 2*off+1)
	alive[off] = 1
	out := make([]float64, n+1)
	gone := 0.0
	span := 0 // alive mass lies within |s| <= span
	for k := 1; k <= n; k++ {
		lo, hi := max(-span-1, -off), min(span+1, off)
		for s := lo; s <= hi; s++ {
			next[s+off] = 0
		}
		for s := -span; s <= span; s++ {
			m := alive[s+off]
			if m == 0 {
				continue
			}
			next[s+1+off] += m * theta
			next[s-1+off] += m * (1 - theta)
		}
		span++
		for s := -span; s <= span; s++ {
			if s >= sb.b[k] || -s >= sb.b[k] {
				gone += next[s+off]
				next[s+off] = 0
			}
		}
		span = min(span, sb.b[k]-1)
		// Beyond the new span every state was absorbed; the next step reads only within it.
		alive, next = next, alive
		out[k] = gone
	}
	return out
}

// separates is the exact chance of separating within MaxPairs pairs when each pair is
// discordant with chance disc, and a discordant pair is a's pass with chance theta.
func (sb *SignBoundary) separates(disc, theta float64) float64 {
	if disc <= 0 {
		return 0
	}
	by := sb.crossedBy(theta)
	total := 0.0
	for k := 1; k <= sb.MaxPairs; k++ {
		total += binomialPMF(sb.MaxPairs, k, disc) * by[k]
	}
	return total
}

// NullError is the exact chance that the test separates sides of equal rates 1/2 (the least
// favourable common rate) within MaxPairs pairs.
func (sb *SignBoundary) NullError() float64 { return sb.separates(0.5, 0.5) }

// Power is the exact chance that the test separates sides of rates pa and pb within MaxPairs
// pairs, every run having a verdict (in either direction; at pa = pb it is the error at that
// common rate).
func (sb *SignBoundary) Power(pa, pb float64) float64 {
	disc := pa*(1-pb) + pb*(1-pa)
	if disc <= 0 {
		return 0
	}
	return sb.separates(disc, pa*(1-pb)/disc)
}

// binomialPMF is P(X = k) for X ~ Binomial(n, p).
func binomialPMF(n, k int, p float64) float64 {
	switch {
	case p <= 0:
		return b2f(k == 0)
	case p >= 1:
		return b2f(k == n)
	}
	ln, _ := math.Lgamma(float64(n + 1))
	lk, _ := math.Lgamma(float64(k + 1))
	lnk, _ := math.Lgamma(float64(n - k + 1))
	return math.Exp(ln - lk - lnk + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p))
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// SignWalk is one sequence of pairs on a boundary: it takes each pair's step and remembers
// the first crossing, which stays decided whatever pairs follow.
type SignWalk struct {
	// S is a's discordant passes minus b's, K the discordant pairs, Pairs every pair taken.
	S, K, Pairs int
	// Crossed is +1 once the walk separated the sides with a ahead, -1 with b ahead, 0
	// before; At is the pair (1-based) at which it did.
	Crossed, At int

	sb *SignBoundary
}

// NewSignWalk starts a walk on sb.
func NewSignWalk(sb *SignBoundary) *SignWalk { return &SignWalk{sb: sb} }

// Add takes one pair: a and b are 1 for a pass, 0 for a fail.
func (w *SignWalk) Add(a, b int) {
	w.Pairs++
	if a == b {
		return
	}
	w.K++
	w.S += a - b
	if w.Crossed == 0 {
		if c := w.sb.Crosses(w.S, w.K); c != 0 {
			w.Crossed, w.At = c, w.Pairs
		}
	}
}
