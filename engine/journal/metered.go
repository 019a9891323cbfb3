package journal

import (
	"fmt"
	"strings"
)

// Metered is a tail's usage as the relay counted it, call by call, beside the agent's own.
type Metered struct {
	Usage
	// Calls is the number of model calls the relay saw.
	Calls int `json:"calls"`
	// Refused is the number of calls the relay answered with an over-budget error.
	Refused int `json:"refused,omitempty"`
	// OverBudget is why the relay stopped the agent ("" when it did not).
	OverBudget string `json:"over_budget,omitempty"`
	// Differs is set when the agent's own count differs from the relay's by more than
	// meterTolerance: one of the two is wrong, and the report says so.
	Differs string `json:"differs,omitempty"`
	// Incomplete counts the calls whose answer was longer than the relay reads (32 MiB, passed
	// on whole): their tokens may be short, so the tail's count is a floor.
	Incomplete int `json:"incomplete,omitempty"`
	// Simulated is set when the calls went to tare's model server: its tokens are the
	// server's and its dollars what they would cost; nothing was paid.
	Simulated bool `json:"simulated,omitempty"`
}

// Line is one tail's metered usage in a report's words, with the flag and the stop if any.
func (m *Metered) Line() string {
	line := fmt.Sprintf("relay counted %s in, %s out, %s cache read, %s cache write in %d model calls",
		Tokens(m.Input), Tokens(m.Output), Tokens(m.CacheRead), Tokens(m.CacheWrite), m.Calls)
	if len(m.Unpriced) > 0 {
		line += " · cost unknown: no price for " + strings.Join(m.Unpriced, ", ")
	} else {
		line += fmt.Sprintf(" · $%.4f (tare's prices)", m.Cost)
	}
	if m.Simulated {
		line += " · " + SimulatedNote
	}
	if m.Incomplete > 0 {
		line += fmt.Sprintf(" · incomplete: %d answers over 32 MiB were not read whole, so the count is a floor", m.Incomplete)
	}
	if m.Differs != "" {
		line += " · ! " + m.Differs
	}
	if m.OverBudget != "" {
		line += " · over budget: " + m.OverBudget
	}
	return line
}

// SimulatedNote follows every figure from tare's model server: its answers are simulated, and
// their dollars were never paid.
const SimulatedNote = "simulated: tare's model server, no money spent"

// Tokens is a token count in a report's words: 950, 12k, 1.2M.
func Tokens(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%.0fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}
