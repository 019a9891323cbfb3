package journal

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"tare/agent"
)

// A tail's status: while it runs, and how it ended. Only passed and failed are verdicts; a
// rate and its Wilson interval count those alone and say what they left out.
const (
	StatusRunning = "running"
	StatusPassed  = "passed"
	// StatusFailed: the check (or, without a check, the agent's exit) said no.
	StatusFailed = "failed"
	// StatusNoVerdict: the tail ended without saying anything about the agent; Reason says why.
	StatusNoVerdict = "no-verdict"
)

// Reason is why a tail has no verdict.
type Reason string

// The reasons a tail has no verdict.
const (
	// ReasonNotStarted: the agent never ran (the capsule would not restore, the room would
	// not start...). The check is not run: an untouched project that passes it says nothing.
	ReasonNotStarted Reason = "not-started"
	// ReasonKilled: the operator stopped the tail.
	ReasonKilled Reason = "killed"
	// ReasonTimeout: tare's agent timeout stopped the agent before it produced anything.
	ReasonTimeout Reason = "timeout"
	// ReasonQuota, ReasonOverloaded, ReasonDropped: the provider ended the run (see
	// agent.ProviderStopped).
	ReasonQuota      Reason = agent.StopQuota
	ReasonOverloaded Reason = agent.StopOverloaded
	ReasonDropped    Reason = agent.StopDropped
	// ReasonInterrupted: tare itself stopped during the tail (a crash); resume runs it again.
	ReasonInterrupted Reason = "interrupted"
	// ReasonError: a tail journaled as "error" by a tare from before outcomes had reasons.
	ReasonError Reason = "error"
	// ReasonCheckError: the check could not run (its room did not start), so nothing was
	// said of the workspace.
	ReasonCheckError Reason = "check-error"
	// ReasonOverBudget: the relay refused a model call because the tail's or the run's
	// --max-cost/--max-tokens was spent; what the agent would have done next is unknown.
	ReasonOverBudget Reason = "over-budget"
)

// Label is the reason in a report's words.
func (r Reason) Label() string {
	switch r {
	case ReasonNotStarted:
		return "not started"
	case ReasonTimeout:
		return "timed out before output"
	case ReasonCheckError:
		return "check could not run"
	case ReasonOverBudget:
		return "over budget"
	case "":
		return "unknown"
	}
	return string(r)
}

// verdict reports whether status is a verdict: passed or failed.
func verdict(status string) bool { return status == StatusPassed || status == StatusFailed }

// Finished reports whether status ends a tail: a verdict or no verdict.
func Finished(status string) bool { return verdict(status) || status == StatusNoVerdict }

// NormalizeOutcome reads a status journaled by any tare: "error" (a tare from before no
// verdict had reasons) becomes no verdict with the reason its detail names.
func NormalizeOutcome(status string, reason Reason, detail string) (string, Reason) {
	if status != "error" && status != StatusNoVerdict {
		return status, reason
	}
	if reason != "" {
		return StatusNoVerdict, reason
	}
	switch {
	case strings.Contains(detail, ErrKilled.Error()):
		reason = ReasonKilled
	case strings.HasPrefix(detail, "not started") || strings.HasPrefix(detail, "agent did not start"):
		reason = ReasonNotStarted
	case strings.HasPrefix(detail, "interrupted"):
		reason = ReasonInterrupted
	default:
		reason = ReasonError
	}
	return StatusNoVerdict, reason
}

// outcomeLabel is an attempt's outcome in a report's words: "passed", "failed", or the
// reason it has no verdict.
func outcomeLabel(status string, reason Reason) string {
	if status == StatusNoVerdict {
		return reason.Label()
	}
	return status
}

// countList renders counts as "1 quota, 2 killed", largest first, then by name.
func countList(counts map[string]int) string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if counts[keys[i]] != counts[keys[j]] {
			return counts[keys[i]] > counts[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%d %s", counts[k], k)
	}
	return strings.Join(parts, ", ")
}

// ErrKilled is the cause of a tail's context when the operator killed it.
var ErrKilled = errors.New("killed by the operator")
