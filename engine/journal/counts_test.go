package journal

import "testing"

// TestCountedAttempt: which attempt of a tail its side counts, and as what. The first that
// counts decides: a verdict, over budget (failed) or a kill counted as failed; a retry
// replaces only an attempt left out, and a tail with nothing that counts is left out.
func TestCountedAttempt(t *testing.T) {
	type at struct {
		status Status
		reason Reason
		kill   KillAs
	}
	for _, tc := range []struct {
		name     string
		attempts []at
		want     Status // "passed", "failed" or "" (left out)
		n        int
	}{
		{"a pass", []at{{StatusPassed, "", ""}}, StatusPassed, 0},
		{"over budget is a failure", []at{{StatusNoVerdict, ReasonOverBudget, ""}}, StatusFailed, 0},
		{"a kill counted as failed", []at{{StatusNoVerdict, ReasonKilled, KillFailed}}, StatusFailed, 0},
		{"a kill left out", []at{{StatusNoVerdict, ReasonKilled, KillLeftOut}}, "", 0},
		{"a kill not asked is left out", []at{{StatusNoVerdict, ReasonKilled, KillNotAsked}}, "", 0},
		{"a quota wall is left out", []at{{StatusNoVerdict, ReasonQuota, ""}}, "", 0},
		{"a retry never replaces a kill counted as failed", []at{{StatusNoVerdict, ReasonKilled, KillFailed}, {StatusPassed, "", ""}}, StatusFailed, 0},
		{"nor over budget", []at{{StatusNoVerdict, ReasonOverBudget, ""}, {StatusPassed, "", ""}}, StatusFailed, 0},
		{"nor a failure", []at{{StatusFailed, "", ""}, {StatusPassed, "", ""}}, StatusFailed, 0},
		{"a retry of a kill left out counts", []at{{StatusNoVerdict, ReasonKilled, KillLeftOut}, {StatusPassed, "", ""}}, StatusPassed, 1},
		{"a retry after a crash counts", []at{{StatusNoVerdict, ReasonInterrupted, ""}, {StatusFailed, "", ""}}, StatusFailed, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := &TailState{ID: "a-0"}
			for i, a := range tc.attempts {
				cur := Attempt{N: i, Status: a.status, Reason: a.reason, Kill: a.kill}
				if i < len(tc.attempts)-1 {
					ts.Earlier = append(ts.Earlier, cur)
					continue
				}
				ts.Attempt = cur
			}
			a, ok := ts.Counted()
			var got Status
			if ok {
				got, _ = a.Counts()
			}
			if got != tc.want || (ok && a.N != tc.n) {
				t.Errorf("counted %q (attempt %d, %v), want %q (attempt %d)", got, a.N, ok, tc.want, tc.n)
			}
		})
	}
}
