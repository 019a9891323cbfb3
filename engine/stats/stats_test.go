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
		{0, 10, 0, 0.2775},
		{10, 10, 0.7225, 1},
		{5, 10, 0.2366, 0.7634},
		{6, 10, 0.3127, 0.8318},
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

// Mover on a single difference is Newcombe's interval; on the mean of two differences it
// weighs each difference equally whatever the counts behind it; a term with no verdicts
// leaves the combination unmeasured.
func TestMover(t *testing.T) {
	if z := Z(0.05); !near(z, 1.959964) {
		t.Errorf("Z(0.05) = %.6f", z)
	}
	if z := Bonferroni(0.05, 6); !near(z, 2.638257) {
		t.Errorf("Bonferroni(0.05, 6) = %.6f, want the z of 1 - 0.05/6", z)
	}
	d, lo, hi := Diff(56, 70, 48, 80)
	e, l, h, ok := Mover([]Term{{1, 56, 70}, {-1, 48, 80}}, Z(0.05))
	if !ok || !near(d, e) || !near(lo, l) || !near(hi, h) {
		t.Errorf("Mover of a - b = %.4f (%.4f to %.4f), Diff %.4f (%.4f to %.4f)", e, l, h, d, lo, hi)
	}
	// 6/6 - 1/1 and 0/1 - 0/6: both differences are 0, so their mean is, however unevenly
	// the tails reached a verdict.
	e, l, h, ok = Mover([]Term{{0.5, 6, 6}, {-0.5, 1, 1}, {0.5, 0, 1}, {-0.5, 0, 6}}, Z(0.05))
	if !ok || e != 0 || Distinguishable(l, h) || l < -1 || h > 1 {
		t.Errorf("mean of two zero differences: %.3f (%.3f to %.3f)", e, l, h)
	}
	if _, l, h, ok := Mover([]Term{{0.5, 3, 3}, {-0.5, 0, 0}, {0.5, 3, 3}, {-0.5, 0, 3}}, Z(0.05)); ok || l != -1 || h != 1 {
		t.Errorf("a term with no verdicts: ok %v, %.2f to %.2f, want unmeasured, -1 to 1", ok, l, h)
	}
	// A wider z gives a wider interval.
	_, l1, h1, _ := Mover([]Term{{1, 9, 10}, {-1, 3, 10}}, Z(0.05))
	_, l2, h2, _ := Mover([]Term{{1, 9, 10}, {-1, 3, 10}}, Bonferroni(0.05, 6))
	if l2 >= l1 || h2 <= h1 {
		t.Errorf("Bonferroni over 6 (%.3f to %.3f) is not wider than 95%% (%.3f to %.3f)", l2, h2, l1, h1)
	}
}

// Clopper and Pearson's exact limits, as tabulated (e.g. 0/10: upper 0.3085; 1/10:
// 0.0025-0.4450; 5/10: 0.1871-0.8129 at 95%).
func TestClopperPearson(t *testing.T) {
	for _, tc := range []struct {
		x, n   int
		lo, hi float64
	}{{0, 10, 0, 0.3085}, {1, 10, 0.0025, 0.4450}, {5, 10, 0.1871, 0.8129}, {3, 3, 0.2924, 1}} {
		lo, hi := ClopperPearson(tc.x, tc.n, 0.05)
		if !near(lo, tc.lo) || !near(hi, tc.hi) {
			t.Errorf("ClopperPearson(%d, %d) = %.4f-%.4f, want %.4f-%.4f", tc.x, tc.n, lo, hi, tc.lo, tc.hi)
		}
	}
}

// Z is the two-sided standard normal quantile for an interval that leaves out alpha in all:
// 1.96 for alpha = 0.05.
func Z(alpha float64) float64 { return math.Sqrt2 * math.Erfinv(1-alpha) }

// Bonferroni is the z of each of m intervals that together leave out at most alpha: each is
// made at level 1 - alpha/m, so the chance that any of the m misses (or that any of m calls
// "distinguishable from zero" is made where the truth is zero) is at most alpha, whatever the
// intervals' dependence. No calls at all is one interval's z.
func Bonferroni(alpha float64, m int) float64 { return Z(alpha / float64(max(1, m))) }
