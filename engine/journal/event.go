// Package journal is what a run records and how it is read back: the events (Event), the
// journal file they are appended to and its index, the bus that carries them to live
// subscribers, the run state they replay to (RunState), the outcomes a tail can have, a
// tail's result.json (TailResult) and a recording's record.json (Recording); what the app
// reads back from them (a tail's detail, a step's changes, two tails side by side); and
// Printable, which keeps an agent's text from driving the terminal it is shown on. It
// imports nothing of the engine that writes runs.
package journal

import (
	"fmt"
	"slices"
	"time"
)

// Event is one thing that happened in a run. Exactly one of the payload fields is set; the
// journal stores events as JSON lines and a watcher rebuilds a run's state from them.
type Event struct {
	// Seq numbers a run's events from 1, in the order the journal holds them.
	Seq int64 `json:"seq"`
	// Time is when the event was published.
	Time time.Time `json:"time"`
	// Run is the run's id (its directory's name).
	Run string `json:"run"`

	RunStarted   *RunStarted   `json:"run_started,omitempty"`
	Phase        *Phase        `json:"phase,omitempty"`
	TailStarted  *TailStarted  `json:"tail_started,omitempty"`
	ToolCall     *ToolCall     `json:"tool_call,omitempty"`
	TailFinished *TailFinished `json:"tail_finished,omitempty"`
	TailChecking *TailChecking `json:"tail_checking,omitempty"`
	Probed       *Probed       `json:"probed,omitempty"`
	Resumed      *Resumed      `json:"resumed,omitempty"`
	RunFinished  *RunFinished  `json:"run_finished,omitempty"`
	// Placed is where a cluster backend's tail is: its job, queued or running on a node.
	Placed *Placed `json:"placed,omitempty"`
	// Stalled says a tail's agent has gone quiet for longer than its pace (or is heard again).
	Stalled *Stalled `json:"stalled,omitempty"`
}

// Final reports whether e ends something (a tail or a run). Final events are never
// coalesced or dropped by any subscriber; intermediate ones may be.
func (e Event) Final() bool {
	return e.TailFinished != nil || e.RunFinished != nil || e.RunStarted != nil || e.Resumed != nil
}

// Kind names the payload, for logs and line printers.
func (e Event) Kind() string {
	switch {
	case e.RunStarted != nil:
		return "run started"
	case e.Phase != nil:
		return "phase"
	case e.TailStarted != nil:
		return "tail started"
	case e.ToolCall != nil:
		return "tool call"
	case e.TailFinished != nil:
		return "tail finished"
	case e.TailChecking != nil:
		return "tail checking"
	case e.Probed != nil:
		return "probed"
	case e.Resumed != nil:
		return "resumed"
	case e.RunFinished != nil:
		return "run finished"
	case e.Placed != nil:
		return "placed"
	case e.Stalled != nil:
		return "stalled"
	}
	return "unknown"
}

// Side is one agent with its arguments, as compared in a run.
type Side struct {
	// Key is the side's short name: a, b, c...
	Key string `json:"key"`
	// Agent is the agent's name (claude, codex, pi, agy).
	Agent string `json:"agent"`
	// Args are the agent's extra arguments.
	Args []string `json:"args,omitempty"`
	// Prompt is the side's own prompt, when it has one.
	Prompt string `json:"prompt,omitempty"`
}

// RunStarted opens a run.
type RunStarted struct {
	// Kind is the command: calibrate, cliff, swap, record...
	Kind    string `json:"kind"`
	Project string `json:"project"`
	Prompt  string `json:"prompt,omitempty"`
	Check   string `json:"check,omitempty"`
	// CheckRoom says where the check runs: in a room of its own (and what it was given), or
	// on the host by the operator's opt-in.
	CheckRoom string `json:"check_room,omitempty"`
	Sides     []Side `json:"sides"`
	// Budget is how many tails the run plans in all.
	Budget int `json:"budget"`
	Jobs   int `json:"jobs"`
	// Simulated is set when the agents talk to tare's own model server: the tokens, and so
	// the dollars, are the server's invention, shown so only as "simulated".
	Simulated bool `json:"simulated,omitempty"`
}

// Phase marks a stage of a run (probe, original, tails, report, done).
type Phase struct {
	Name string `json:"name"`
}

// TailChecking says a tail's agent has ended and its check runs, for at most TimeoutSeconds:
// a check can take minutes, and "running" would hide that the agent is done.
type TailChecking struct {
	ID             string  `json:"id"`
	TimeoutSeconds float64 `json:"timeout_seconds"`
}

// How is how a tail continues: from the project's start, in the recorded agent's own
// session cut after its step, or by another agent handed the story so far.
type How string

// The ways a tail continues.
const (
	HowFresh   How = "fresh"
	HowNative  How = "native"
	HowHandoff How = "handoff"
)

// TailStarted opens one tail: a fresh start, or a continuation of a capsule.
type TailStarted struct {
	ID   string `json:"id"`
	Side string `json:"side"`
	// Step is the capsule the tail continues from (0: a fresh start).
	Step int `json:"step"`
	How  How `json:"how"`
	// Attempt numbers this attempt of the tail (0: the first); a retry or a rerun after a
	// crash is a new attempt, and the earlier ones stay on the record.
	Attempt int `json:"attempt,omitempty"`
	// CapsuleFrom, when set, is the step whose capsule the tail starts from: its own step
	// has none (tare tail --from-nearest).
	CapsuleFrom *int `json:"capsule_from,omitempty"`
}

// ToolCall is one tool call of a tail's agent, as it happens. Intermediate: may be coalesced.
type ToolCall struct {
	Tail    string `json:"tail"`
	Tool    string `json:"tool"`
	Summary string `json:"summary"`
	// Seconds is how long the call took, when known.
	Seconds float64 `json:"seconds,omitempty"`
	// Calls counts the tail's tool calls so far.
	Calls int   `json:"calls"`
	Usage Usage `json:"usage"`
}

// TailFinished closes a tail with its verdict.
type TailFinished struct {
	ID     string `json:"id"`
	Passed bool   `json:"passed"`
	// Status is "passed", "failed" or "no-verdict" (a journal from an older tare may say
	// "error", read as no verdict).
	Status Status `json:"status"`
	// Reason is why a tail has no verdict: not-started, killed, timeout, quota, overloaded,
	// dropped, interrupted.
	Reason Reason `json:"reason,omitempty"`
	// Attempt is the attempt this ends, as its TailStarted numbered it.
	Attempt int `json:"attempt,omitempty"`
	// Kill is, for a tail the operator killed, how the operator said it counts: as failed,
	// or left out as an infrastructure fault (empty: not asked, left out).
	Kill KillAs `json:"kill,omitempty"`
	// Detail is the agent's end and the check's verdict, one line.
	Detail string `json:"detail"`
	// Score is a judge's score when the check printed "score N".
	Score   *int    `json:"score,omitempty"`
	Seconds float64 `json:"seconds"`
	Calls   int     `json:"calls"`
	Usage   Usage   `json:"usage"`
	// CheckUsage is what the check spent (tare's judge's agent): beside the agent's Usage,
	// never in it. Judge is the built-in judge's verdict.
	CheckUsage Usage         `json:"check_usage,omitzero"`
	Judge      *JudgeVerdict `json:"judge,omitempty"`
	// Metered is the usage tare's relay counted, beside the agent's own Usage.
	Metered *Metered `json:"metered,omitempty"`
}

// Probed records a probe's reading before a run uses a room.
type Probed struct {
	Agent   string `json:"agent"`
	Verdict string `json:"verdict"`
	Zero    bool   `json:"zero"`
	Text    string `json:"text"`
}

// Placed is a tail's place on a cluster (--on slurm): its job id and its state there, the
// node once it runs, and how long it waited in the queue (the run time starts after).
type Placed struct {
	Tail string `json:"tail"`
	Job  string `json:"job"`
	// State is pending, running or finished.
	State string `json:"state"`
	Node  string `json:"node,omitempty"`
	// Waited is the seconds from submission to the job's start on its node.
	Waited float64 `json:"waited,omitempty"`
}

// Resumed marks a run continued after a crash: which tails were rerun.
type Resumed struct {
	Rerun []string `json:"rerun,omitempty"`
	// Reattached are tails whose cluster jobs outlived the crash: followed, not rerun.
	Reattached []string `json:"reattached,omitempty"`
}

// RunFinished closes a run; Report is the report's text.
type RunFinished struct {
	Report string `json:"report"`
	Error  string `json:"error,omitempty"`
}

// Usage is what an agent spent: tokens and cost.
type Usage struct {
	Input      int64 `json:"input,omitempty"`
	Output     int64 `json:"output,omitempty"`
	CacheRead  int64 `json:"cache_read,omitempty"`
	CacheWrite int64 `json:"cache_write,omitempty"`
	// Cost is what tare computed from the tokens and its price table, in USD.
	Cost float64 `json:"cost,omitempty"`
	// Reported is what the CLI itself said it cost, when it says (USD).
	Reported *float64 `json:"reported,omitempty"`
	Model    string   `json:"model,omitempty"`
	// Unpriced names models tare's price table does not have: their cost is unknown, not 0.
	Unpriced []string `json:"unpriced,omitempty"`
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	u.Input += o.Input
	u.Output += o.Output
	u.CacheRead += o.CacheRead
	u.CacheWrite += o.CacheWrite
	u.Cost += o.Cost
	if o.Reported != nil {
		r := *o.Reported
		if u.Reported != nil {
			r += *u.Reported
		}
		u.Reported = &r
	}
	if u.Model == "" {
		u.Model = o.Model
	}
	for _, m := range o.Unpriced {
		if !slices.Contains(u.Unpriced, m) {
			u.Unpriced = append(u.Unpriced, m)
		}
	}
	return u
}

// IsZero reports whether u records nothing spent.
func (u Usage) IsZero() bool {
	return u.Input == 0 && u.Output == 0 && u.CacheRead == 0 && u.CacheWrite == 0 && u.Cost == 0 && u.Reported == nil
}

// Describe is the place in a line: "job 12 pending", "job 12 running on n1 after 0.4s in
// the queue", "job 12 finished on n1".
func (p Placed) Describe() string {
	s := fmt.Sprintf("tail %s job %s %s", p.Tail, p.Job, p.State)
	if p.Node != "" {
		s += " on " + p.Node
	}
	if p.State == "running" {
		s += fmt.Sprintf(" after %.1fs in the queue", p.Waited)
	}
	return s
}
