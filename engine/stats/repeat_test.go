package stats

import (
	"math"
	"testing"
)

// pass^k is C(x,k)/C(n,k), not (x/n)^k; the flip rate counts disagreeing pairs of runs.
func TestRepeatFigures(t *testing.T) {
	if p, ok := PassK(3, 4, 2); !ok || math.Abs(p-0.5) > 1e-12 {
		t.Errorf("pass^2 of 3/4 = %v %v, want 0.5 (3 of the 6 pairs of runs both pass)", p, ok)
	}
	if _, ok := PassK(3, 4, 5); ok {
		t.Errorf("pass^5 from 4 runs: want none")
	}
	if f, ok := FlipRate(2, 4); !ok || math.Abs(f-4.0/6) > 1e-12 {
		t.Errorf("flip rate of 2/4 = %v %v, want 4/6 (4 of the 6 pairs disagree)", f, ok)
	}
	if _, ok := FlipRate(1, 1); ok {
		t.Errorf("flip rate of one run: want none")
	}
}
