package stats

import (
	"math"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 0.00051 }

// The worked examples of Wilson (1927) as tabulated by Newcombe (1998, Statistics in
// Medicine 17:857, Table I, method 3).
func TestWilson(t *testing.T) {
	for _, tc := range []struct {
		x, n   int
		lo, hi float64
	}{
		{81, 263, 0.2553, 0.3662},
		{15, 148, 0.0624, 0.1605},
		{0, 20, 0, 0.1611},
		{1, 29, 0.0061, 0.1718},
	} {
		lo, hi := Wilson(tc.x, tc.n)
		if !near(lo, tc.lo) || !near(hi, tc.hi) {
			t.Errorf("Wilson(%d, %d) = %.4f-%.4f, want %.4f-%.4f", tc.x, tc.n, lo, hi, tc.lo, tc.hi)
		}
	}
	if lo, hi := Wilson(0, 0); lo != 0 || hi != 1 {
		t.Errorf("no verdicts: %.2f-%.2f, want 0-1", lo, hi)
	}
}

// Newcombe (1998, Statistics in Medicine 17:873, Table II, method 10).
func TestDiff(t *testing.T) {
	for _, tc := range []struct {
		xa, na, xb, nb int
		lo, hi         float64
	}{
		{56, 70, 48, 80, 0.0524, 0.3339},
		{9, 10, 3, 10, 0.1705, 0.8090},
		{5, 56, 0, 29, -0.0381, 0.1926},
		{0, 10, 0, 20, -0.1611, 0.2775},
		{10, 10, 0, 20, 0.6791, 1.0000},
	} {
		_, lo, hi := Diff(tc.xa, tc.na, tc.xb, tc.nb)
		if !near(lo, tc.lo) || !near(hi, tc.hi) {
			t.Errorf("Diff(%d/%d - %d/%d) = %.4f to %.4f, want %.4f to %.4f", tc.xa, tc.na, tc.xb, tc.nb, lo, hi, tc.lo, tc.hi)
		}
	}
	if _, lo, hi := Diff(3, 10, 3, 10); Distinguishable(lo, hi) {
		t.Errorf("equal rates are distinguishable: %.3f to %.3f", lo, hi)
	}
}
