package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestMeanIntervalCoverage: for skewed and two-point distributions on [-1, 1] (where a
// normal interval fails at small n), the interval holds the true mean at least 95% of the
// time at n = 3, 8 and 20, and a mean of zero is refuted at most 5% of the time when it is
// the truth.
func TestMeanIntervalCoverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	dists := map[string]struct {
		draw func() float64
		mean float64
	}{
		"two-point -0.8 w.p. 5/9, +1 w.p. 4/9 (mean 0)": {func() float64 {
			if rng.Float64() < 5.0/9 {
				return -0.8
			}
			return 1
		}, 0},
		"skewed: -1 w.p. 0.1, else 0.3 (mean 0.17)": {func() float64 {
			if rng.Float64() < 0.1 {
				return -1
			}
			return 0.3
		}, 0.17},
		"uniform on [-1, 0.5] (mean -0.25)": {func() float64 { return -1 + 1.5*rng.Float64() }, -0.25},
	}
	const runs = 1000
	for name, d := range dists {
		for _, n := range []int{3, 8, 20} {
			miss, falseZero := 0, 0
			for range runs {
				xs := make([]float64, n)
				for i := range xs {
					xs[i] = d.draw()
				}
				lo, hi, refuted := MeanInterval(xs, 0.05)
				if d.mean < lo || d.mean > hi {
					miss++
				}
				if d.mean == 0 && refuted {
					falseZero++
				}
				if refuted == (lo <= 0 && hi >= 0) {
					t.Fatalf("%s, n %d: refutes zero %v but the interval is %.3f to %.3f", name, n, refuted, lo, hi)
				}
			}
			if rate := float64(miss) / runs; rate > 0.05+3*math.Sqrt(0.05*0.95/runs) {
				t.Errorf("%s, n %d: the interval missed the mean in %.3f of %d samples, want at most 0.05", name, n, rate, runs)
			}
			if rate := float64(falseZero) / runs; rate > 0.05+3*math.Sqrt(0.05*0.95/runs) {
				t.Errorf("%s, n %d: a true mean of zero refuted in %.3f", name, n, rate)
			}
		}
	}
}
