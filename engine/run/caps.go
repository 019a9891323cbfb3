package run

import (
	"fmt"
	"math"
	"strings"
)

// Caps bound what a tail, and a whole run, may spend on model calls. The relay's meter
// enforces them: once a cap is spent, the next call is answered with an error in the agent's
// own dialect, the agent reports it, and the tail ends as over budget. Zero is no cap.
type Caps struct {
	// TailTokens and TailCost cap each tail attempt (every token counts; cost in USD on tare's
	// price table).
	TailTokens int64   `json:"tail_tokens,omitempty"`
	TailCost   float64 `json:"tail_cost,omitempty"`
	// RunTokens and RunCost cap all tails of the run together.
	RunTokens int64   `json:"run_tokens,omitempty"`
	RunCost   float64 `json:"run_cost,omitempty"`
}

// Set says whether any cap is set.
func (c Caps) Set() bool {
	return c.TailTokens > 0 || c.TailCost > 0 || c.RunTokens > 0 || c.RunCost > 0
}

// Check is the one-line complaint about caps that cannot work for agents, or nil. Caps hold
// on tare's model server and on a real provider alike, where the relay reads the model calls
// (see interceptRoom), except those in unreadProviders.
func (c Caps) Check(script string, agents ...string) error {
	for _, v := range []float64{float64(c.TailTokens), c.TailCost, float64(c.RunTokens), c.RunCost} {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("--max-cost/--max-tokens: %v is not a cap; fix: give a positive number (0: no cap)", v)
		}
	}
	if !c.Set() || script != "" {
		return nil
	}
	for _, a := range agents {
		if why, ok := unreadProviders[a]; ok {
			return fmt.Errorf("--max-cost/--max-tokens: %s's real provider is %s, whose answers tare's relay does not read, so a cap cannot hold; fix: drop the cap for %s, or run it on tare's model server (--script)", a, why, a)
		}
	}
	return nil
}

// String is the caps in the report's words.
func (c Caps) String() string {
	var parts []string
	if c.TailTokens > 0 {
		parts = append(parts, fmt.Sprintf("%d tokens a tail", c.TailTokens))
	}
	if c.TailCost > 0 {
		parts = append(parts, fmt.Sprintf("$%g a tail", c.TailCost))
	}
	if c.RunTokens > 0 {
		parts = append(parts, fmt.Sprintf("%d tokens the run", c.RunTokens))
	}
	if c.RunCost > 0 {
		parts = append(parts, fmt.Sprintf("$%g the run", c.RunCost))
	}
	return strings.Join(parts, ", ")
}

// unreadProviders are the agents whose real provider's model calls the relay leaves unread
// (their adapters name no model host): agy's Code Assist calls were never seen (agy is a
// native binary from Google's installer, never run here), so a cap on it cannot be promised.
var unreadProviders = map[string]string{
	"agy": "Google's Code Assist as Antigravity calls it (never run here)",
}
