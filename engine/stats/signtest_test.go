package stats

import (
	"math"
	"testing"
)

// enumerateError is the chance, found by listing every sequence of n pairs, that a walk on
// sb separates sides of rates pa and pb: each pair is (1,0), (0,1) or concordant.
func enumerateError(sb *SignBoundary, n int, pa, pb float64) float64 {
	up, down := pa*(1-pb), pb*(1-pa)
	same := 1 - up - down
	var rec func(w SignWalk, left int, p float64) float64
	rec = func(w SignWalk, left int, p float64) float64 {
		if w.Crossed != 0 {
			return p
		}
		if left == 0 || p == 0 {
			return 0
		}
		total := 0.0
		for _, c := range []struct {
			a, b int
			q    float64
		}{{1, 0, up}, {0, 1, down}, {0, 0, same}} {
			next := w
			next.Add(c.a, c.b)
			total += rec(next, left-1, p*c.q)
		}
		return total
	}
	return rec(*NewSignWalk(sb), n, 1)
}

// TestSignBoundaryExact: the boundary's error and power, computed by dynamic programming,
// equal the chance found by listing every sequence of pairs (caps 8 and 12, equal and
// unequal rates); the calibrated error is at most alpha and the next lower boundary's would
// exceed it; the boundary rises by at most one per discordant pair (the monotonicity the
// worst-and-best-case rule for runs without a verdict needs).
func TestSignBoundaryExact(t *testing.T) {
	for _, n := range []int{8, 12} {
		sb, err := NewSignBoundary(n, 0.2)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range [][2]float64{{0.5, 0.5}, {0.2, 0.2}, {0.7, 0.3}, {0.9, 0.4}} {
			dp, listed := sb.Power(r[0], r[1]), enumerateError(sb, n, r[0], r[1])
			if math.Abs(dp-listed) > 1e-12 {
				t.Errorf("cap %d, rates %v: dynamic programming %.15f, every sequence listed %.15f", n, r, dp, listed)
			}
		}
	}
	for _, n := range []int{2, 20, 100, 1000} {
		sb, err := NewSignBoundary(n, 0.05)
		if err != nil {
			t.Fatal(err)
		}
		if sb.Error > 0.05 || sb.Error != sb.NullError() {
			t.Errorf("cap %d: error %.5f (recomputed %.5f), want at most 0.05", n, sb.Error, sb.NullError())
		}
		if lower := signBoundary(n, sb.Z-1e-6); lower.NullError() <= 0.05 && n > 2 {
			t.Errorf("cap %d: a lower boundary keeps the error at %.5f: the calibration wastes its 5%%", n, lower.NullError())
		}
		for p := 0.05; p < 1; p += 0.05 {
			if e := sb.Power(p, p); e > sb.Error+1e-12 {
				t.Errorf("cap %d: error %.5f at equal rates %.2f, above the least favourable %.5f", n, e, p, sb.Error)
			}
		}
		for k := 2; k <= n; k++ {
			if d := sb.b[k] - sb.b[k-1]; d < 0 || d > 1 {
				t.Errorf("cap %d: boundary %d after %d discordant pairs, %d after %d", n, sb.b[k], k, sb.b[k-1], k-1)
			}
		}
	}
	for _, bad := range []struct {
		n     int
		alpha float64
	}{{0, 0.05}, {MaxSignPairs + 1, 0.05}, {10, 0}, {10, 0.5}} {
		if _, err := NewSignBoundary(bad.n, bad.alpha); err == nil {
			t.Errorf("NewSignBoundary(%d, %v): want an error", bad.n, bad.alpha)
		}
	}
}
