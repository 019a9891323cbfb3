package journal

// TailResult is a tail's result.json: what a tail did and its verdict.
type TailResult struct {
	ID     string `json:"id"`
	Side   string `json:"side"`
	Agent  string `json:"agent"`
	Step   int    `json:"step"`
	How    How    `json:"how"`
	Passed bool   `json:"passed"`
	// Status is passed, failed or no-verdict; an older tare's "error" is read as no verdict.
	Status Status `json:"status"`
	// Reason is why the tail has no verdict (see Reason).
	Reason Reason `json:"reason,omitempty"`
	// Attempt numbers this attempt of the tail (0: the first).
	Attempt int `json:"attempt,omitempty"`
	// Kill is how the operator said a kill counts (see KillAs).
	Kill KillAs `json:"kill,omitempty"`
	// CapsuleFrom is the step whose capsule the tail started from when Step has none of its
	// own (tare tail --from-nearest).
	CapsuleFrom *int `json:"capsule_from,omitempty"`
	// AgentExit is how the agent ended: "agent exit N", or why it was stopped.
	AgentExit string `json:"agent_exit"`
	Check     string `json:"check"`
	// CheckLog is the last lines the check printed (Printable); check.log beside result.json
	// has all of it, bounded.
	CheckLog []string `json:"check_log,omitempty"`
	Score    *int     `json:"score,omitempty"`
	Seconds  float64  `json:"seconds"`
	Calls    int      `json:"calls"`
	Session  string   `json:"session,omitempty"`
	Usage    Usage    `json:"usage"`
	// CheckUsage is what the check spent (the built-in judge's agent), never the agent's.
	CheckUsage Usage         `json:"check_usage,omitzero"`
	Judge      *JudgeVerdict `json:"judge,omitempty"`
	// Metered is the usage tare's relay counted call by call (on tare's model server).
	Metered *Metered `json:"metered,omitempty"`
}

// Finished is the journal's event for a tail with this result.
func (res TailResult) Finished() *TailFinished {
	return &TailFinished{ID: res.ID, Passed: res.Passed, Status: res.Status, Reason: res.Reason, Attempt: res.Attempt, Kill: res.Kill,
		Detail: res.AgentExit + "; " + res.Check, Score: res.Score, Seconds: res.Seconds, Calls: res.Calls, Usage: res.Usage,
		CheckUsage: res.CheckUsage, Judge: res.Judge, Metered: res.Metered}
}
