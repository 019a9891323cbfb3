package journal

// Stalled says a running tail's agent has been silent (no model answer, no tool call in its
// stream) for longer than its own pace allows, before any timeout ends it; Over says it is
// heard again. Intermediate: a later ToolCall or the tail's end also clears it.
type Stalled struct {
	Tail string `json:"tail"`
	// Silent is how long the agent had been silent, in seconds, when this was said.
	Silent float64 `json:"silent"`
	// Threshold is the silence that counts as stalled for this tail: its pace times
	// stallPace, never less than the floor ([tails] stall_floor).
	Threshold float64 `json:"threshold"`
	Over      bool    `json:"over,omitempty"`
}

func applyStalled(s *RunState, st *Stalled) {
	ts := s.Tails[st.Tail]
	if ts == nil || ts.Status != StatusRunning {
		return
	}
	if st.Over {
		ts.Stalled = nil
		return
	}
	c := *st
	ts.Stalled = &c
}
