package engine

import "time"

// RunState is a run as the events so far describe it: what a view shows and what resume
// needs. It is rebuilt by applying a journal's events in order, so every process that reads
// the journal (the app, tare watch, the ssh server) sees the same run.
type RunState struct {
	ID      string
	Kind    string
	Project string
	Prompt  string
	Check   string
	Sides   []Side
	Budget  int
	Jobs    int
	// Simulated: the run's model is tare's model server, its dollars are not money spent.
	Simulated bool
	Phase     string
	Started   time.Time
	// Updated is the time of the newest event.
	Updated time.Time
	// Finished is set once the run has a report.
	Finished bool
	Report   string
	Error    string
	// Tails by id, and their ids in the order they started.
	Tails map[string]*TailState
	Order []string
	// Probes maps an agent to its last reading's verdict.
	Probes map[string]Probed
	// Seq is the last event applied.
	Seq int64
}

// TailState is one tail as its events describe it.
type TailState struct {
	ID      string
	Side    string
	Step    int
	How     string
	Attempt int
	// Status is "running", "passed", "failed" or "error".
	Status  string
	Detail  string
	Score   *int
	Started time.Time
	Ended   time.Time
	Calls   int
	Usage   Usage
	// Tools are the tail's tool calls so far (coalesced views may miss some; Calls counts all).
	Tools []ToolCall
}

// Elapsed is how long the tail ran, or has been running at now.
func (t *TailState) Elapsed(now time.Time) time.Duration {
	if !t.Ended.IsZero() {
		return t.Ended.Sub(t.Started)
	}
	return now.Sub(t.Started)
}

// NewRunState returns an empty state for run id.
func NewRunState(id string) *RunState {
	return &RunState{ID: id, Tails: map[string]*TailState{}, Probes: map[string]Probed{}}
}

// Replay builds a run's state from its events.
func Replay(id string, events []Event) *RunState {
	s := NewRunState(id)
	for _, e := range events {
		s.Apply(e)
	}
	return s
}

// maxTools bounds the tool calls a TailState keeps for its view.
const maxTools = 200

// Apply folds one event into the state. Events older than the last applied are ignored, so
// a watcher may re-read a journal from the start without counting anything twice.
func (s *RunState) Apply(e Event) {
	if e.Seq != 0 && e.Seq <= s.Seq {
		return
	}
	e = printableEvent(e) // a journal written before tare escaped agent text

	if e.Seq != 0 {
		s.Seq = e.Seq
	}
	if e.Time.After(s.Updated) {
		s.Updated = e.Time
	}
	switch {
	case e.RunStarted != nil:
		r := e.RunStarted
		s.Kind, s.Project, s.Prompt, s.Check, s.Sides, s.Budget, s.Jobs = r.Kind, r.Project, r.Prompt, r.Check, r.Sides, r.Budget, r.Jobs
		s.Started, s.Simulated = e.Time, r.Simulated
	case e.Phase != nil:
		s.Phase = e.Phase.Name
	case e.Probed != nil:
		s.Probes[e.Probed.Agent] = *e.Probed
	case e.TailStarted != nil:
		t := e.TailStarted
		ts, ok := s.Tails[t.ID]
		if !ok {
			ts = &TailState{ID: t.ID}
			s.Tails[t.ID] = ts
			s.Order = append(s.Order, t.ID)
		}
		*ts = TailState{ID: t.ID, Side: t.Side, Step: t.Step, How: t.How, Attempt: t.Attempt, Status: "running", Started: e.Time}
	case e.ToolCall != nil:
		if ts := s.Tails[e.ToolCall.Tail]; ts != nil {
			ts.Calls, ts.Usage = e.ToolCall.Calls, e.ToolCall.Usage
			ts.Tools = append(ts.Tools, *e.ToolCall)
			if len(ts.Tools) > maxTools {
				ts.Tools = ts.Tools[len(ts.Tools)-maxTools:]
			}
		}
	case e.TailFinished != nil:
		f := e.TailFinished
		ts := s.Tails[f.ID]
		if ts == nil {
			ts = &TailState{ID: f.ID, Started: e.Time}
			s.Tails[f.ID] = ts
			s.Order = append(s.Order, f.ID)
		}
		ts.Status, ts.Detail, ts.Score, ts.Ended, ts.Calls, ts.Usage = f.Status, f.Detail, f.Score, e.Time, f.Calls, f.Usage
	case e.Resumed != nil:
		for _, id := range e.Resumed.Rerun {
			if ts := s.Tails[id]; ts != nil && ts.Status == "running" {
				ts.Status = "rerun"
			}
		}
	case e.RunFinished != nil:
		s.Finished, s.Report, s.Error = true, e.RunFinished.Report, e.RunFinished.Error
		s.Phase = "done"
	}
}

// SideTally is a side's results so far.
type SideTally struct {
	Side    Side
	Passed  int
	Done    int
	Running int
	Lo, Hi  float64
	Usage   Usage
}

// Tally counts each side's passes, finished and running tails, with the Wilson interval.
func (s *RunState) Tally() []SideTally {
	out := make([]SideTally, len(s.Sides))
	index := map[string]int{}
	for i, side := range s.Sides {
		out[i].Side = side
		index[side.Key] = i
	}
	for _, id := range s.Order {
		t := s.Tails[id]
		i, ok := index[t.Side]
		if !ok {
			continue
		}
		out[i].Usage = out[i].Usage.Add(t.Usage)
		switch t.Status {
		case "running":
			out[i].Running++
		case "passed":
			out[i].Passed++
			out[i].Done++
		case "failed", "error":
			out[i].Done++
		}
	}
	for i := range out {
		out[i].Lo, out[i].Hi = Wilson(out[i].Passed, out[i].Done)
	}
	return out
}

// Counts is how many tails are done and running, against the budget.
func (s *RunState) Counts() (done, running, budget int) {
	for _, t := range s.Tails {
		switch t.Status {
		case "running":
			running++
		case "passed", "failed", "error":
			done++
		}
	}
	return done, running, s.Budget
}

// Cost is the run's total cost so far, in USD.
func (s *RunState) Cost() float64 {
	var c float64
	for _, t := range s.Tails {
		c += t.Usage.Cost
	}
	return c
}

// TailIDs returns the tail ids in start order, optionally only those of one status.
func (s *RunState) TailIDs(status string) []string {
	var out []string
	for _, id := range s.Order {
		if status == "" || s.Tails[id].Status == status {
			out = append(out, id)
		}
	}
	return out
}
