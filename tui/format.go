package tui

import (
	"fmt"
	"math"
	"time"

	"tare/engine/journal"
)

// span formats a duration the way the tables show it: 42s, 3m05s, 1h02m.
func span(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	s := int(d.Round(time.Second) / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	default:
		return fmt.Sprintf("%dh%02dm", s/3600, (s%3600)/60)
	}
}

// ago formats when something happened relative to now: just now, 3m ago, 2h ago, 4d ago.
func ago(t, now time.Time) string {
	if t.IsZero() {
		return "never"
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%dm ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh ago", int(d/time.Hour))
	default:
		return fmt.Sprintf("%dd ago", int(d/(24*time.Hour)))
	}
}

// tokens formats a token count: 950, 12.3k, 1.2M.
func tokens(u journal.Usage) string {
	n := u.Input + u.Output + u.CacheRead + u.CacheWrite
	switch {
	case n < 1000:
		return fmt.Sprintf("%d", n)
	case n < 1_000_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	default:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	}
}

// cost formats USD: $0.42, $12.30. What the CLI reported stands in when tare computed nothing.
// A model tare has no price for makes the cost unknown: "?", or "$0.42?" for the part it
// could price; never a guessed $0.00.
func cost(u journal.Usage) string {
	c := u.Cost
	if c == 0 && u.Reported != nil {
		c = *u.Reported
	}
	return withUnknown(c, unknownPart(u))
}

// withUnknown is c in USD, or "?" when part of it is unknown and nothing was priced, or
// "$0.42?" when some was.
func withUnknown(c float64, unknown bool) string {
	switch {
	case !unknown:
		return dollars(c)
	case c == 0:
		return "?"
	}
	return dollars(c) + "?"
}

// unknownPart reports whether usage holds tokens of an unpriced model the CLI put no figure on.
func unknownPart(u journal.Usage) bool {
	return len(u.Unpriced) > 0 && u.Reported == nil
}

func dollars(c float64) string { return fmt.Sprintf("$%.2f", c) }

// runCost is a run's cost so far, with "?" when a tail's model has no price.
func runCost(st *journal.RunState) string {
	for _, t := range st.Tails {
		if unknownPart(t.TotalUsage()) {
			return withUnknown(st.Cost(), true)
		}
	}
	return dollars(st.Cost())
}

// runCostLabelled is runCost marked simulated when the run's model is tare's model server
// (its tokens are the server's estimate; nothing was paid).
func runCostLabelled(st *journal.RunState) string {
	if st.Simulated {
		return runCost(st) + " simulated"
	}
	return runCost(st)
}

// percent formats a rate in [0, 1] as a whole percentage.
func percent(p float64) string { return fmt.Sprintf("%d%%", int(math.Round(p*100))) }

// noVerdict is how the app words engine.StatusNoVerdict.
const noVerdict = "no verdict"

// statusWord is a tail's status as the app shows it.
// tailStatus is a tail's status word: "checking" once its agent has ended and its check runs.
func tailStatus(t *journal.TailState) string {
	if t.Status == journal.StatusRunning && !t.Checking.IsZero() {
		return "checking"
	}
	return tailWord(t)
}

// tailWord is a finished tail's outcome as its side's rate counts it: a tail with no check's
// verdict that counts as failed (over budget, a kill the operator counted as failed) shows
// as failed; the detail says why.
func tailWord(t *journal.TailState) string {
	if c, ok := journal.CountsAs(t.Status, t.Reason, t.Kill); ok {
		return string(c)
	}
	return statusWord(t.Status)
}

// checkingNote says how long a tail's check has run, of how long it may: "check 0:42 of 10m".
func checkingNote(t *journal.TailState, now time.Time) string {
	note := "check running " + span(now.Sub(t.Checking))
	if t.CheckTimeout > 0 {
		note += " of at most " + span(t.CheckTimeout)
	}
	return note
}

func statusWord(status journal.Status) string {
	if status == journal.StatusNoVerdict {
		return noVerdict
	}
	return string(status)
}
