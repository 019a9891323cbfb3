package engine

import (
	"tare/agent"
	"tare/engine/journal"
)

// agentEnd is how a tail's agent ended, as much as the verdict depends on.
type agentEnd struct {
	// started: the room started and the agent ran (its exit code is real).
	started bool
	// produced: the agent's stream showed a tool call or text from the model.
	produced bool
	// timedOut: tare's agent timeout stopped it.
	timedOut bool
	// stop is set when the provider ended the run.
	stop *agent.ProviderStop
	// overBudget: the relay refused a call over the tail's or the run's cap.
	overBudget bool
}

// withoutVerdict says whether a tail whose agent ended so can have no verdict, and why: the
// check is run only when it cannot. killed is the operator's stop.
func withoutVerdict(end agentEnd, killed bool) (journal.Reason, bool) {
	switch {
	case killed:
		return journal.ReasonKilled, true
	case !end.started:
		return journal.ReasonNotStarted, true
	case end.overBudget:
		return journal.ReasonOverBudget, true
	case end.stop != nil:
		return journal.Reason(end.stop.Kind), true
	case end.timedOut && !end.produced:
		return journal.ReasonTimeout, true
	}
	return "", false
}

// checkOutcome is the status a check's result gives a tail: its verdict, or no verdict when
// the check never ran.
func checkOutcome(c checkResult) (journal.Status, journal.Reason) {
	switch {
	case c.CouldNotRun:
		return journal.StatusNoVerdict, journal.ReasonCheckError
	case c.Passed:
		return journal.StatusPassed, ""
	}
	return journal.StatusFailed, ""
}
