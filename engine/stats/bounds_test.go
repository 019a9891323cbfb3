package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestRateBounds(t *testing.T) {
	for _, tc := range []struct {
		name                    string
		passed, failed, leftOut int
		worst, best, lo, hi     float64
	}{
		// The review's repro: 4 passed, the 4 that would have failed were killed.
		{"4 passed, 4 left out", 4, 0, 4, 0.5, 1, 0.2152, 1},
		{"none left out is the plain rate", 3, 1, 0, 0.75, 0.75, 0.3006, 0.9544},
		{"all left out says nothing", 0, 0, 5, 0, 1, 0, 1},
		{"nothing at all", 0, 0, 0, 0, 1, 0, 1},
		{"failures and a left-out run", 2, 5, 1, 0.25, 0.375, 0.0715, 0.6943},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := RateBounds(tc.passed, tc.failed, tc.leftOut)
			if !near(b.Worst, tc.worst) || !near(b.Best, tc.best) || !near(b.Lo, tc.lo) || !near(b.Hi, tc.hi) {
				t.Errorf("RateBounds(%d, %d, %d) = worst %.4f best %.4f (95%% %.4f-%.4f), want %.4f %.4f (%.4f-%.4f)",
					tc.passed, tc.failed, tc.leftOut, b.Worst, b.Best, b.Lo, b.Hi, tc.worst, tc.best, tc.lo, tc.hi)
			}
			if b.N() != tc.passed+tc.failed+tc.leftOut {
				t.Errorf("N %d", b.N())
			}
		})
	}
}

// TestRateBoundsHoldWhatTheVerdictRateMisses: a side truly passes p, and a share of its
// failures end with no verdict (an operator kills what looks like failing). The rate on
// verdicts alone misses p far more often than 5%; the bounds' range holds it at least 95% of
// the time, whatever the share.
func TestRateBoundsHoldWhatTheVerdictRateMisses(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	const experiments, runs = 4000, 20
	for _, c := range []struct{ p, share float64 }{{0.5, 0}, {0.5, 0.5}, {0.5, 1}, {0.3, 0.5}, {0.8, 1}} {
		verdictMiss, boundsMiss := 0, 0
		for range experiments {
			passed, failed, out := 0, 0, 0
			for range runs {
				switch {
				case rng.Float64() < c.p:
					passed++
				case rng.Float64() < c.share:
					out++
				default:
					failed++
				}
			}
			if lo, hi := Wilson(passed, passed+failed); c.p < lo || c.p > hi {
				verdictMiss++
			}
			if b := RateBounds(passed, failed, out); c.p < b.Lo || c.p > b.Hi {
				boundsMiss++
			}
		}
		vm, bm := float64(verdictMiss)/experiments, float64(boundsMiss)/experiments
		t.Logf("p %.1f, share of failures left out %.1f: verdict-only Wilson misses p in %.1f%%, the bounds in %.1f%%", c.p, c.share, 100*vm, 100*bm)
		if bm > 0.05 {
			t.Errorf("p %.1f share %.1f: the bounds missed the true rate in %.1f%% of experiments, more than 5%%", c.p, c.share, 100*bm)
		}
		if c.share >= 0.5 && vm < 0.2 {
			t.Errorf("p %.1f share %.1f: the verdict-only rate missed in only %.1f%%: the experiment does not show the bias", c.p, c.share, 100*vm)
		}
	}
}

// The expected figures were computed apart from this code, from exact binomial sums.
func TestPassKInterval(t *testing.T) {
	for _, tc := range []struct {
		x, n, k int
		ok      bool
		lo, hi  float64
	}{
		// 5 passes in 12: the point estimate 0.0013 printed as 0.00 read as "never".
		{5, 12, 5, true, 0.00008, 0.1980},
		{3, 3, 2, true, 0.0855, 1},
		{0, 4, 2, true, 0, 0.3628},
		{2, 3, 5, false, 0, 0}, // needs 5 runs
		{10, 10, 3, true, 0.3307, 1},
	} {
		lo, hi, ok := PassKInterval(tc.x, tc.n, tc.k)
		if ok != tc.ok || (ok && (math.Abs(lo-tc.lo) > 0.00051 || !near(hi, tc.hi))) {
			t.Errorf("PassKInterval(%d, %d, %d) = %.5f-%.4f %v, want %.5f-%.4f %v", tc.x, tc.n, tc.k, lo, hi, ok, tc.lo, tc.hi, tc.ok)
		}
	}
	for _, tc := range []struct {
		x, n   int
		ok     bool
		lo, hi float64
	}{
		{5, 10, true, 0.3042, 0.5},    // the rate's interval holds 1/2: the flip rate's top is 0.5
		{10, 10, true, 0, 0.4267},     // all passed: no flip seen, but up to 0.43 is possible
		{1, 12, true, 0.0042, 0.4735}, // the top from the rate's upper bound 0.38
		{1, 1, false, 0, 0},
	} {
		lo, hi, ok := FlipRateInterval(tc.x, tc.n)
		if ok != tc.ok || (ok && (!near(lo, tc.lo) || !near(hi, tc.hi))) {
			t.Errorf("FlipRateInterval(%d, %d) = %.4f-%.4f %v, want %.4f-%.4f %v", tc.x, tc.n, lo, hi, ok, tc.lo, tc.hi, tc.ok)
		}
	}
}

// TestPassKIntervalCovers: the interval holds the true p^k (and 2p(1-p)) in at least 95% of
// experiments, at rates where the point estimate from a few runs is often 0.
func TestPassKIntervalCovers(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	const experiments = 4000
	for _, c := range []struct {
		p    float64
		n, k int
	}{{0.5, 12, 5}, {0.3, 6, 3}, {0.9, 10, 5}, {0.7, 5, 5}} {
		missK, missF := 0, 0
		for range experiments {
			x := 0
			for range c.n {
				if rng.Float64() < c.p {
					x++
				}
			}
			lo, hi, _ := PassKInterval(x, c.n, c.k)
			if truth := math.Pow(c.p, float64(c.k)); truth < lo || truth > hi {
				missK++
			}
			flo, fhi, _ := FlipRateInterval(x, c.n)
			if truth := 2 * c.p * (1 - c.p); truth < flo || truth > fhi {
				missF++
			}
		}
		t.Logf("p %.1f, %d runs: pass^%d interval misses in %.1f%%, flip rate's in %.1f%%", c.p, c.n, c.k, 100*float64(missK)/experiments, 100*float64(missF)/experiments)
		if float64(missK)/experiments > 0.05 || float64(missF)/experiments > 0.05 {
			t.Errorf("p %.1f n %d: misses pass^%d %d, flip %d of %d: above 5%%", c.p, c.n, c.k, missK, missF, experiments)
		}
	}
}
