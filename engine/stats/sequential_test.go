package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestConfSeqTimeUniform: the confidence sequence misses the true mean at some look up to
// 200 values in at most 5% of 1,500 sequences, for a pass rate (values 0 or 1 in [0, 1]) and
// for a difference of two (values -1, 0, 1 in [-1, 1]). Each range lies within the one
// before (checked at every look of the first 50 sequences), so a miss at any look is a miss
// at the last: the last look is the one checked.
func TestConfSeqTimeUniform(t *testing.T) {
	const n, looks = 1500, 200
	rng := rand.New(rand.NewPCG(1, 2))
	draw := func(p float64) float64 {
		if rng.Float64() < p {
			return 1
		}
		return 0
	}
	for _, c := range []struct {
		name   string
		lo, hi float64
		truth  float64
		value  func() float64
	}{
		{"rate 0.5", 0, 1, 0.5, func() float64 { return draw(0.5) }},
		{"rate 0.1", 0, 1, 0.1, func() float64 { return draw(0.1) }},
		{"rate 0.95", 0, 1, 0.95, func() float64 { return draw(0.95) }},
		{"difference 0.6-0.4", -1, 1, 0.2, func() float64 { return draw(0.6) - draw(0.4) }},
		{"difference 0.9-0.9", -1, 1, 0, func() float64 { return draw(0.9) - draw(0.9) }},
	} {
		missed := 0
		for i := range n {
			cs := NewConfSeq(0.05, c.lo, c.hi)
			prevLo, prevHi := c.lo, c.hi
			for k := 1; k <= looks; k++ {
				cs.Add(c.value())
				if i < 50 && k%5 == 0 {
					lo, hi := cs.Interval()
					if lo < prevLo-1e-12 || hi > prevHi+1e-12 {
						t.Fatalf("%s: the range widened from %.4f-%.4f to %.4f-%.4f at value %d", c.name, prevLo, prevHi, lo, hi, k)
					}
					prevLo, prevHi = lo, hi
				}
			}
			if lo, hi := cs.Interval(); lo > c.truth || hi < c.truth {
				missed++
			}
		}
		t.Logf("%s: missed the truth at some look in %.2f%% of %d sequences", c.name, 100*float64(missed)/n, n)
		if float64(missed)/n > 0.05 {
			t.Errorf("%s: missed at some look in %.2f%%, want at most 5%%", c.name, 100*float64(missed)/n)
		}
	}
}

// TestConfSeqInterval: before any value the range is the whole of [Lo, Hi]; after 400
// pairs of 0.7 against 0.4 it holds 0.3 and is narrower than 0.5; it reaches a grid cell
// beyond the outermost grid value not refuted.
func TestConfSeqInterval(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	cs := NewConfSeq(0.05, -1, 1)
	if lo, hi := cs.Interval(); lo != -1 || hi != 1 {
		t.Fatalf("before any value: %.2f to %.2f, want -1 to 1", lo, hi)
	}
	for range 400 {
		a, b := 0.0, 0.0
		if rng.Float64() < 0.7 {
			a = 1
		}
		if rng.Float64() < 0.4 {
			b = 1
		}
		cs.Add(a - b)
	}
	lo, hi := cs.Interval()
	if lo > 0.3 || hi < 0.3 || hi-lo > 0.5 || lo <= 0 {
		t.Errorf("after 400 pairs of 0.7 vs 0.4: %.2f to %.2f, want a range around 0.3, above 0, narrower than 0.5", lo, hi)
	}
	cell := 2.0 / csGrid
	kept := math.Inf(1)
	for i := range csGrid {
		if m := -1 + (float64(i)+0.5)*cell; !cs.refuted(m) {
			kept = math.Min(kept, m)
		}
	}
	if want := kept - cell; math.Abs(lo-want) > 1e-12 {
		t.Errorf("lowest unrefuted grid value %.4f, interval from %.4f: want a cell below, %.4f", kept, lo, want)
	}
}
