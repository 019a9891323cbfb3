package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// experiment draws pairs from two sides with pass rates pa and pb until the sequence
// separates them or max pairs are spent; it returns whether it separated and after how many.
func experiment(rng *rand.Rand, pa, pb float64, max int) (bool, int) {
	s := NewSequential(0.05)
	for s.Pairs() < max {
		a, b := 0, 0
		if rng.Float64() < pa {
			a = 1
		}
		if rng.Float64() < pb {
			b = 1
		}
		s.Add(a, b)
		if s.Separated() {
			return true, s.Pairs()
		}
	}
	return false, s.Pairs()
}

// peekingWilson is what the sequence replaces: Newcombe's 95% interval of the difference,
// looked at after every pair, stopping at the first separation.
func peekingWilson(rng *rand.Rand, pa, pb float64, max int) bool {
	xa, xb := 0, 0
	for n := 1; n <= max; n++ {
		if rng.Float64() < pa {
			xa++
		}
		if rng.Float64() < pb {
			xb++
		}
		if _, lo, hi := Diff(xa, n, xb, n); n >= 5 && Distinguishable(lo, hi) {
			return true
		}
	}
	return false
}

// TestSequentialFalseSeparation: with equal sides, 10,000 simulated experiments that look
// after every pair (up to 200 pairs) and stop at the first separation declare the sides
// different in at most 5% of experiments; the repeated Wilson looks it replaces do far worse.
func TestSequentialFalseSeparation(t *testing.T) {
	const n, max = 10000, 200
	rng := rand.New(rand.NewPCG(1, 2))
	for _, p := range []float64{0.2, 0.5, 0.8} {
		false_, peek := 0, 0
		for range n {
			if sep, _ := experiment(rng, p, p, max); sep {
				false_++
			}
			if peekingWilson(rng, p, p, max) {
				peek++
			}
		}
		rate, peekRate := float64(false_)/n, float64(peek)/n
		t.Logf("equal sides at %.1f: the sequence separated %.2f%% of %d experiments; repeated Wilson looks %.1f%%", p, 100*rate, n, 100*peekRate)
		// 5% plus three standard errors of a 10,000-experiment estimate.
		if rate > 0.05+3*math.Sqrt(0.05*0.95/n) {
			t.Errorf("equal sides at %.1f: false separations %.2f%%, want at most 5%%", p, 100*rate)
		}
		if peekRate <= rate {
			t.Errorf("repeated Wilson looks (%.1f%%) were no worse than the sequence (%.1f%%): the test shows nothing", 100*peekRate, 100*rate)
		}
	}
}

// fixedDesign is the runs per side a fixed design needs for 80% power at 95% (two-sided z
// test of two proportions).
func fixedDesign(pa, pb float64) int {
	za, zb := 1.959963984540054, 0.8416212335729143
	return int(math.Ceil((za + zb) * (za + zb) * (pa*(1-pa) + pb*(1-pb)) / ((pa - pb) * (pa - pb))))
}

// TestSequentialNeedsFewerRunsThanAFixedDesign: both designs are sized for the smallest
// difference worth finding, 0.5 against 0.65, with 80% power at 95%. The fixed design then
// spends its 167 runs per side whatever the truth; the sequence, capped where its own power
// at that difference reaches 80%, stops as soon as the difference shows. At exactly the
// planned difference it needs more (the price of stopping at any look); at every larger one,
// fewer, and at twice the planned difference well under half.
func TestSequentialNeedsFewerRunsThanAFixedDesign(t *testing.T) {
	const pb, planned, n = 0.5, 0.65, 4000
	fixed := fixedDesign(planned, pb)
	rng := rand.New(rand.NewPCG(3, 4))
	run := func(pa float64, cap_, n int) (power, mean float64) {
		total, hits := 0, 0
		for range n {
			sep, used := experiment(rng, pa, pb, cap_)
			total += used
			if sep {
				hits++
			}
		}
		return float64(hits) / float64(n), float64(total) / float64(n)
	}
	cap_ := 0
	for m := fixed; m <= 4*fixed; m += 10 {
		if p, _ := run(planned, m, 2000); p >= 0.8 {
			cap_ = m
			break
		}
	}
	if cap_ == 0 {
		t.Fatalf("the sequence does not reach 80%% power at %.2f vs %.2f within %d pairs", planned, pb, 4*fixed)
	}
	t.Logf("sized for %.2f vs %.2f: fixed design %d runs per side; the sequence capped at %d", planned, pb, fixed, cap_)
	for _, pa := range []float64{0.65, 0.7, 0.8, 0.9} {
		power, mean := run(pa, cap_, n)
		t.Logf("true %.2f vs %.2f: the sequence separates in %.0f%% with %.1f runs per side on average (%.0f%% of the fixed design's %d)", pa, pb, 100*power, mean, 100*mean/float64(fixed), fixed)
		if pa > planned && mean >= float64(fixed) {
			t.Errorf("true %.2f: the sequence used %.1f runs per side on average, the fixed design %d", pa, mean, fixed)
		}
		if pa >= pb+2*(planned-pb) && mean >= float64(fixed)/2 {
			t.Errorf("true %.2f, twice the planned difference: %.1f runs per side, not under half the fixed design's %d", pa, mean, fixed)
		}
	}
}

// The confidence sequence holds the true difference and narrows as pairs come in.
func TestSequentialInterval(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	s := NewSequential(0.05)
	lo0, hi0 := s.Interval()
	if lo0 != -1 || hi0 != 1 {
		t.Fatalf("before any pair: %.2f to %.2f, want -1 to 1", lo0, hi0)
	}
	for range 400 {
		a, b := 0, 0
		if rng.Float64() < 0.7 {
			a = 1
		}
		if rng.Float64() < 0.4 {
			b = 1
		}
		s.Add(a, b)
	}
	lo, hi := s.Interval()
	if lo > 0.3 || hi < 0.3 || hi-lo > 0.5 {
		t.Errorf("after 400 pairs of 0.7 vs 0.4: %.2f to %.2f, want a range around 0.3 narrower than 0.5", lo, hi)
	}
	if !s.Separated() {
		t.Errorf("0.7 vs 0.4 over 400 pairs not separated")
	}
}

// The interval and Separated agree about Δ = 0, which is not on the interval's grid: over
// sequences near the edge of separation, an interval holds 0 inside it exactly when the
// sequence is not separated. And the interval reaches half a grid cell past the outermost
// grid value the pairs have not refuted (short of 0 once 0 is refuted).
func TestSequentialIntervalAgreesWithSeparated(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	disagree := 0
	const n = 300
	for range n {
		s := NewSequential(0.05)
		for range 60 {
			a, b := 0, 0
			if rng.Float64() < 0.75 {
				a = 1
			}
			if rng.Float64() < 0.45 {
				b = 1
			}
			s.Add(a, b)
		}
		lo, hi := s.Interval()
		if inside := lo < 0 && 0 < hi; inside == s.Separated() {
			disagree++
			t.Logf("separated %v, interval %.4f to %.4f", s.Separated(), lo, hi)
		}
		kept := 1.0
		for i := range seqGrid {
			b := bettor{m: -1 + (2*float64(i)+1)/seqGrid}
			for _, d := range s.diffs {
				b.add(d)
			}
			if b.logWealth < math.Log(1/s.Alpha) {
				kept = math.Min(kept, b.m)
			}
		}
		if want := math.Max(-1, kept-1.0/seqGrid); lo > want+1e-12 && !(s.Separated() && lo == 0) {
			t.Errorf("lowest unrefuted grid value %.4f, interval from %.4f: want half a cell below, %.4f", kept, lo, want)
		}
	}
	if disagree > 0 {
		t.Errorf("the interval and Separated disagree about 0 in %d of %d sequences", disagree, n)
	}
}
