package journal

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"tare/agent"
)

// Status is a tail's status: while it runs, and how it ended. Only passed and failed are
// verdicts; a rate and its Wilson interval count those alone and say what they left out.
type Status string

// The statuses of a tail.
const (
	StatusRunning Status = "running"
	StatusPassed  Status = "passed"
	// StatusFailed: the check (or, without a check, the agent's exit) said no.
	StatusFailed Status = "failed"
	// StatusNoVerdict: the tail ended without saying anything about the agent; Reason says why.
	StatusNoVerdict Status = "no-verdict"
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
func verdict(status Status) bool { return status == StatusPassed || status == StatusFailed }

// Finished reports whether status ends a tail: a verdict or no verdict.
func Finished(status Status) bool { return verdict(status) || status == StatusNoVerdict }

// NormalizeOutcome reads a status journaled by any tare: "error" (a tare from before no
// verdict had reasons) becomes no verdict with the reason its detail names.
func NormalizeOutcome(status Status, reason Reason, detail string) (Status, Reason) {
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

// KillAs is how an operator's kill counts in its side's rate, as the operator answered when
// killing the tail. A kill decided while watching the tail says something about the agent,
// so it is never silently left out of the rate as if at random.
type KillAs string

// The answers to "count as failed, or leave out as an infrastructure fault".
const (
	// KillNotAsked: the kill came from a path that could not ask (tare kill, a cancelled
	// cluster job, a journal from before the question): left out, and the report says so.
	KillNotAsked KillAs = ""
	// KillFailed: the tail counts as a failure, and a retry never replaces it.
	KillFailed KillAs = "failed"
	// KillLeftOut: an infrastructure fault; the tail is left out (with the rate's bounds)
	// and a retry of it is a new attempt beside the killed one.
	KillLeftOut KillAs = "left-out"
)

// Valid reports whether k is one of the answers.
func (k KillAs) Valid() bool { return k == KillNotAsked || k == KillFailed || k == KillLeftOut }

// KillError is a kill's cause with the operator's answer: it is ErrKilled to errors.Is.
type KillError struct{ As KillAs }

// Error reads as ErrKilled: a tail's detail says "killed by the operator" either way.
func (e KillError) Error() string { return ErrKilled.Error() }

// Is makes every KillError an ErrKilled.
func (e KillError) Is(target error) bool { return target == ErrKilled }

// KillAnswer is the operator's answer carried by a kill's cause (KillNotAsked when the
// cause carries none).
func KillAnswer(cause error) KillAs {
	var k KillError
	if errors.As(cause, &k) {
		return k.As
	}
	return KillNotAsked
}

// CountsAs is how an attempt counts in its side's rate: a verdict counts as itself; an
// outcome of the agent with no check's verdict (over budget: the agent spent its cap; a kill
// the operator counted as failed) counts as failed. Anything else is left out (ok false):
// nothing of the agent was seen, or the operator called it an infrastructure fault.
func CountsAs(status Status, reason Reason, kill KillAs) (counted Status, ok bool) {
	switch {
	case verdict(status):
		return status, true
	case status != StatusNoVerdict:
		return "", false
	case reason == ReasonOverBudget, reason == ReasonKilled && kill == KillFailed:
		return StatusFailed, true
	}
	return "", false
}

// noVerdictLabel is a no-verdict attempt's reason in a report's words, with how a kill was
// counted: "killed, counted as failed", "killed, left out: infrastructure", "killed, not asked".
func noVerdictLabel(reason Reason, kill KillAs) string {
	if reason != ReasonKilled {
		return reason.Label()
	}
	switch kill {
	case KillFailed:
		return "killed, counted as failed"
	case KillLeftOut:
		return "killed, left out: infrastructure"
	}
	return "killed, not asked"
}
