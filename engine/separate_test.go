package engine

import (
	"math"
	"math/rand/v2"
	"testing"

	"tare/engine/stats"
)

// simulateSeparated runs one simulated --until-separated calibrate: each run of a side passes
// with its rate, or has no verdict with chance noVerdict; runs start in pairs up to maxRuns
// per side and stop at the pair where the engine's own decision (verdictPairs, stoppingPair)
// separates the sides. It returns whether they separated and the runs started per side.
func simulateSeparated(rng *rand.Rand, pa, pb, noVerdict float64, maxRuns int) (bool, int) {
	draw := func(p float64) int {
		switch u := rng.Float64(); {
		case u < noVerdict:
			return runNoVerdict
		case u < noVerdict+(1-noVerdict)*p:
			return runPassed
		}
		return runFailed
	}
	a, b := make([]int, maxRuns), make([]int, maxRuns)
	for i := range maxRuns {
		a[i], b[i] = draw(pa), draw(pb)
	}
	stop, _ := stoppingPair(verdictPairs(a, b))
	if stop == 0 {
		return false, maxRuns
	}
	// With one job, the runs started are those up to the later side's stop-th verdict.
	used := 0
	for _, side := range [][]int{a, b} {
		v := 0
		for i, x := range side {
			if x != runNoVerdict {
				v++
			}
			if v == stop {
				used = max(used, i+1)
				break
			}
		}
	}
	return true, used
}

// TestUntilSeparatedFalseSeparationAndRuns: the --until-separated procedure as the engine
// decides it (pairs of the next verdict of each side, no verdicts left out, stop at the
// first separated pair) declares equal sides different in at most 5% of 10,000 simulated
// experiments at each rate (max 200 runs per side, 10% of runs with no verdict); at a real
// difference it starts fewer runs on average than the fixed design of the same power.
func TestUntilSeparatedFalseSeparationAndRuns(t *testing.T) {
	const n, maxRuns, noVerdict = 10000, 200, 0.1
	rng := rand.New(rand.NewPCG(16, 2))
	t.Logf("%-12s %-10s %-22s %s", "rates a/b", "separated", "runs per side (mean)", "fixed design, same power")
	for _, p := range []float64{0.2, 0.5, 0.8} {
		sep, runs := 0, 0
		for range n {
			s, used := simulateSeparated(rng, p, p, noVerdict, maxRuns)
			runs += used
			if s {
				sep++
			}
		}
		rate := float64(sep) / n
		t.Logf("%.2f / %.2f  %6.2f%%    %6.1f                 - (equal sides)", p, p, 100*rate, float64(runs)/n)
		// 5% plus three standard errors of a 10,000-experiment estimate.
		if rate > 0.05+3*math.Sqrt(0.05*0.95/n) {
			t.Errorf("equal sides at %.1f: false separations %.2f%%, want at most 5%%", p, 100*rate)
		}
	}
	for _, c := range [][2]float64{{0.5, 0.8}, {0.3, 0.7}, {0.2, 0.5}} {
		const m = 2000
		sep, runs := 0, 0
		for range m {
			s, used := simulateSeparated(rng, c[0], c[1], noVerdict, maxRuns)
			runs += used
			if s {
				sep++
			}
		}
		power, mean := float64(sep)/m, float64(runs)/m
		// The fixed design that reaches the same power at this difference, counting the runs
		// it must start to get its verdicts when a tenth have none.
		fixedVerdicts, _ := stats.RunsToSeparate(c[0], c[1], 0.05, math.Min(power, 0.999))
		fixed := math.Ceil(float64(fixedVerdicts) / (1 - noVerdict))
		t.Logf("%.2f / %.2f  %6.2f%%    %6.1f                 %.0f (power %.1f%%)", c[0], c[1], 100*power, mean, fixed, 100*power)
		if power < 0.8 {
			t.Errorf("%.2f vs %.2f: separated in %.1f%% within %d runs per side, want at least 80%%", c[0], c[1], 100*power, maxRuns)
		}
		if mean >= fixed {
			t.Errorf("%.2f vs %.2f: %.1f runs per side on average, the fixed design of the same power %.0f", c[0], c[1], mean, fixed)
		}
	}
}

// TestVerdictPairs: a pair is the next verdict of each side in run order; a run with no
// verdict forms no pair, and a side's verdicts beyond the other's wait unpaired.
func TestVerdictPairs(t *testing.T) {
	a := []int{runPassed, runNoVerdict, runFailed, runPassed}
	b := []int{runFailed, runFailed}
	got := verdictPairs(a, b)
	want := [][2]int{{1, 0}, {0, 0}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("pairs %v, want %v", got, want)
	}
}
