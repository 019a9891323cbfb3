package engine

import (
	"testing"

	"tare/engine/journal"
)

// TestRepeatLine: pass^k and the flip rate are printed only with their intervals, a figure
// that rounds to 0 as "<0.01", and a k the side has too few verdicts for says so.
func TestRepeatLine(t *testing.T) {
	for _, tc := range []struct {
		passed, verdicts int
		want             string
	}{
		// The review's real case: 5 passes in 12, pass^5 = C(5,5)/C(12,5) = 0.0013. The intervals
		// were computed apart from this code, from exact binomial sums.
		{5, 12, "flip rate 0.53 (95% 0.26-0.50) · pass^2 0.15 (95% 0.02-0.52) · pass^3 0.05 (95% <0.01-0.38) · pass^5 <0.01 (95% <0.01-0.20)"},
		{3, 3, "flip rate 0.00 (95% 0.00-0.50) · pass^2 1.00 (95% 0.09-1.00) · pass^3 1.00 (95% 0.02-1.00) · pass^5 needs 5 verdicts (3)"},
		{1, 1, "flip rate needs 2 verdicts · pass^2 needs 2 verdicts (1) · pass^3 needs 3 verdicts (1) · pass^5 needs 5 verdicts (1)"},
	} {
		tally := journal.SideTally{Side: journal.Side{Key: "a"}, Passed: tc.passed, Failed: tc.verdicts - tc.passed, Verdicts: tc.verdicts}
		if got := repeatLine(repeatReport(tally)); got != tc.want {
			t.Errorf("%d/%d:\n got %s\nwant %s", tc.passed, tc.verdicts, got, tc.want)
		}
	}
}
