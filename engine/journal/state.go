package journal

import (
	"fmt"
	"strings"
	"time"

	"tare/engine/stats"
)

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
	// Original is the recording's tool calls (a record or cliff run), as its stream showed
	// them: the steps a cliff's curve is drawn along.
	Original []ToolCall
	// Probes maps an agent to its last reading's verdict.
	Probes map[string]Probed
	// Seq is the last event applied.
	Seq int64
}

// TailState is one tail as its events describe it: its latest attempt embedded, so a
// tail's status, usage and times read as its own (t.Status), and the attempts before it in
// Earlier. A retry appends an attempt; nothing replaces one.
type TailState struct {
	ID   string
	Side string
	Step int
	How  How
	// Attempt is the latest attempt; Attempt.N numbers it (0: the first). Its Status is
	// StatusRunning, StatusPassed, StatusFailed or StatusNoVerdict (with Reason), or "rerun"
	// while tare resume has not restarted it.
	Attempt
	// Tools are the tail's tool calls so far (coalesced views may miss some; Calls counts all).
	Tools []ToolCall
	// Earlier are the attempts before the latest, oldest first.
	Earlier []Attempt
	// CapsuleFrom, when set, is the step whose capsule the tail started from: Step has none.
	CapsuleFrom *int
	// Place is where a cluster backend runs the tail (nil: in tare's own process).
	Place *Placed
	// Stalled is set while the running tail's agent is silent past its pace (see stall.go).
	Stalled *Stalled
	// Checking is when the running tail's check started (zero while its agent runs), and
	// CheckTimeout how long the check may take.
	Checking     time.Time
	CheckTimeout time.Duration
}

// Attempt is one attempt of a tail: the latest in TailState.Attempt, the finished ones
// before it in TailState.Earlier.
type Attempt struct {
	N      int
	Status Status
	Reason Reason
	// Kill is how the operator said a kill counts (see KillAs).
	Kill    KillAs
	Detail  string
	Score   *int
	Started time.Time
	Ended   time.Time
	Calls   int
	Usage   Usage
	// CheckUsage is what the check spent (tare's judge's agent), kept apart from Usage;
	// Judge is the built-in judge's verdict.
	CheckUsage Usage
	Judge      *JudgeVerdict
	// Queued is how long the attempt waited in a cluster's queue before it ran: between
	// Started and Ended, but not run time.
	Queued time.Duration
	// Metered is the attempt's usage as tare's relay counted it (nil: not metered).
	Metered *Metered
}

// Attempts are every attempt of the tail, oldest first, the latest last.
func (t *TailState) Attempts() []Attempt {
	return append(append([]Attempt(nil), t.Earlier...), t.Attempt)
}

// Counts is how the attempt counts in its side's rate (see CountsAs): passed or failed, or
// left out (ok false).
func (a Attempt) Counts() (Status, bool) { return CountsAs(a.Status, a.Reason, a.Kill) }

// Label is the attempt's outcome in a report's words: "passed", "failed", "over budget",
// "killed, counted as failed"...
func (a Attempt) Label() string {
	if a.Status == StatusNoVerdict {
		return noVerdictLabel(a.Reason, a.Kill)
	}
	return string(a.Status)
}

// Counted is the attempt the tail's side counts: the first that counts (a verdict, or an
// outcome of the agent counted as failed: over budget, a kill the operator counted as
// failed). A retry never replaces a counted attempt, so retrying failures cannot raise a
// rate; only an attempt left out (nothing of the agent seen, or an infrastructure fault by
// the operator's word) lets a later attempt count, and it stays on the record beside it.
// A counted attempt with no verdict counts as failed: its Status is not StatusPassed.
func (t *TailState) Counted() (Attempt, bool) {
	for _, a := range t.Attempts() {
		if _, ok := a.Counts(); ok {
			return a, true
		}
	}
	return Attempt{}, false
}

// TotalUsage is what every attempt of the tail spent.
func (t *TailState) TotalUsage() Usage {
	u := t.Usage
	for _, a := range t.Earlier {
		u = u.Add(a.Usage)
	}
	return u
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
	e = PrintableEvent(e) // a journal written before tare escaped agent text

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
		var earlier []Attempt
		if ok {
			// A retry, or a rerun after a crash: the attempt so far stays on the record. One
			// that never finished was interrupted.
			prev := ts.Attempt
			if !Finished(prev.Status) {
				prev.Status, prev.Reason = StatusNoVerdict, ReasonInterrupted
			}
			earlier = append(ts.Earlier, prev)
		}
		*ts = TailState{ID: t.ID, Side: t.Side, Step: t.Step, How: t.How, Attempt: Attempt{N: t.Attempt, Status: StatusRunning, Started: e.Time},
			Earlier: earlier, CapsuleFrom: t.CapsuleFrom}
	case e.ToolCall != nil:
		if e.ToolCall.Tail == "original" && s.Tails["original"] == nil {
			s.Original = append(s.Original, *e.ToolCall)
		}
		if ts := s.Tails[e.ToolCall.Tail]; ts != nil {
			ts.Calls, ts.Usage = e.ToolCall.Calls, e.ToolCall.Usage
			ts.Stalled = nil
			ts.Tools = append(ts.Tools, *e.ToolCall)
			if len(ts.Tools) > maxTools {
				ts.Tools = ts.Tools[len(ts.Tools)-maxTools:]
			}
		}
	case e.TailChecking != nil:
		if ts := s.Tails[e.TailChecking.ID]; ts != nil && ts.Status == StatusRunning {
			ts.Checking, ts.CheckTimeout = e.Time, time.Duration(e.TailChecking.TimeoutSeconds*float64(time.Second))
		}
	case e.TailFinished != nil:
		f := e.TailFinished
		ts := s.Tails[f.ID]
		if ts == nil {
			ts = &TailState{ID: f.ID, Attempt: Attempt{Started: e.Time}}
			s.Tails[f.ID] = ts
			s.Order = append(s.Order, f.ID)
		}
		ts.Status, ts.Reason = NormalizeOutcome(f.Status, f.Reason, f.Detail)
		ts.Kill = f.Kill
		ts.Detail, ts.Score, ts.Ended, ts.Calls, ts.Usage = f.Detail, f.Score, e.Time, f.Calls, f.Usage
		ts.CheckUsage, ts.Judge = f.CheckUsage, f.Judge
		ts.Metered = f.Metered
		ts.Stalled = nil
	case e.Stalled != nil:
		applyStalled(s, e.Stalled)
	case e.Placed != nil:
		if ts := s.Tails[e.Placed.Tail]; ts != nil {
			p := *e.Placed
			ts.Place = &p
			ts.Queued = time.Duration(p.Waited * float64(time.Second))
		}
	case e.Resumed != nil:
		// The run goes on (a resume, or a retry of a finished run): it is not finished until
		// its next report.
		s.Finished = false
		for _, id := range e.Resumed.Rerun {
			if ts := s.Tails[id]; ts != nil && ts.Status == StatusRunning {
				ts.Status = "rerun"
			}
		}
	case e.RunFinished != nil:
		s.Finished, s.Report, s.Error = true, e.RunFinished.Report, e.RunFinished.Error
		s.Phase = "done"
	}
}

// SideTally is a side's results so far. The rate is Passed of Verdicts; tails over budget or
// killed as failed count as failures (FailedFrom); the other tails without a verdict are
// left out of it, counted with their reasons in NoVerdict, and not assumed to be missing at
// random: Bounds is the rate if they had all failed or all passed.
type SideTally struct {
	Side Side
	// Passed and Failed count each tail's counted attempt (see TailState.Counted).
	Passed, Failed int
	// FailedFrom counts the failures that had no check's verdict, by reason ("over budget",
	// "killed, counted as failed"): outcomes of the agent, counted as failed.
	FailedFrom map[string]int
	// Verdicts is Passed + Failed: the rate's denominator.
	Verdicts int
	// NoVerdict counts finished tails left out of the rate (no attempt counts); Reasons holds
	// their latest attempt's reason, in a report's words. --until-separated reads it per side.
	NoVerdict int
	Reasons   map[string]int
	// Retried counts tails run more than once; RetriedFrom the outcomes that were retried.
	Retried     int
	RetriedFrom map[string]int
	Running     int
	Lo, Hi      float64
	// Usage is every attempt's; CheckUsage what their checks spent (tare's judge), apart.
	Usage      Usage
	CheckUsage Usage
}

// Rate is the pass rate over verdicts, and false when there is none.
func (t SideTally) Rate() (float64, bool) {
	if t.Verdicts == 0 {
		return 0, false
	}
	return float64(t.Passed) / float64(t.Verdicts), true
}

// Bounds is the rate's worst and best cases over every finished tail: the NoVerdict left
// out counted as all failed, then all passed.
func (t SideTally) Bounds() stats.Bounds { return stats.RateBounds(t.Passed, t.Failed, t.NoVerdict) }

// BoundsText says what the left-out tails could make of the rate, "4/8-8/8 if the 4 left
// out had failed/passed (95% 0.22-1.00)"; empty when none is left out.
func (t SideTally) BoundsText() string {
	if t.NoVerdict == 0 {
		return ""
	}
	b := t.Bounds()
	return fmt.Sprintf("%d/%d-%d/%d if the %d left out had failed/passed (95%% %.2f-%.2f)",
		b.Passed, b.N(), b.Passed+b.LeftOut, b.N(), b.LeftOut, b.Lo, b.Hi)
}

// Summary is the side's counts in one line, every number a reader needs to trust the rate:
// "3/9 passed · 1 failed with no verdict (1 over budget) · 2 no verdict, left out (1 quota,
// 1 killed, not asked) · 3/11-5/11 if the 2 left out had failed/passed (95% ...) · 1
// retried (1 failed)". A retried tail counts its first counted attempt. word names a pass
// ("passed", or "finished" for a run without a check).
func (t SideTally) Summary(word string) string {
	parts := []string{fmt.Sprintf("%d/%d %s", t.Passed, t.Verdicts, word)}
	if out := t.LeftOut(); out != "" {
		parts = append(parts, out)
	}
	if t.Running > 0 {
		parts = append(parts, fmt.Sprintf("%d running", t.Running))
	}
	return strings.Join(parts, " · ")
}

// LeftOut is what the side's rate does not count as it is, with reasons: "1 failed with no
// verdict (1 over budget) · 2 no verdict, left out (1 quota, 1 killed, not asked) · 3/11-5/11
// if the 2 left out had failed/passed (95% ...) · 1 retried (1 failed)"; empty when there is
// nothing to say.
func (t SideTally) LeftOut() string {
	var parts []string
	if n := sum(t.FailedFrom); n > 0 {
		parts = append(parts, fmt.Sprintf("%d failed with no verdict (%s)", n, countList(t.FailedFrom)))
	}
	if t.NoVerdict > 0 {
		parts = append(parts, fmt.Sprintf("%d no verdict, left out (%s)", t.NoVerdict, countList(t.Reasons)), t.BoundsText())
	}
	if t.Retried > 0 {
		parts = append(parts, fmt.Sprintf("%d retried (%s)", t.Retried, countList(t.RetriedFrom)))
	}
	return strings.Join(parts, " · ")
}

// Tally counts each side's verdicts, no verdicts and running tails, with the Wilson interval
// of the verdicts.
func (s *RunState) Tally() []SideTally {
	out := make([]SideTally, len(s.Sides))
	index := map[string]int{}
	for i, side := range s.Sides {
		out[i] = SideTally{Side: side, Reasons: map[string]int{}, RetriedFrom: map[string]int{}, FailedFrom: map[string]int{}}
		index[side.Key] = i
	}
	for _, id := range s.Order {
		t := s.Tails[id]
		i, ok := index[t.Side]
		if !ok {
			continue
		}
		o := &out[i]
		o.Usage = o.Usage.Add(t.TotalUsage())
		for _, a := range t.Attempts() {
			o.CheckUsage = o.CheckUsage.Add(a.CheckUsage)
		}
		if t.Status == StatusRunning {
			o.Running++
		}
		if len(t.Earlier) > 0 {
			o.Retried++
			for _, a := range t.Earlier {
				o.RetriedFrom[a.Label()]++
			}
		}
		if a, ok := t.Counted(); ok {
			switch {
			case a.Status == StatusPassed:
				o.Passed++
			case a.Status == StatusNoVerdict:
				o.Failed++
				o.FailedFrom[a.Label()]++
			default:
				o.Failed++
			}
			o.Verdicts++
			continue
		}
		if t.Status == StatusNoVerdict {
			o.NoVerdict++
			o.Reasons[t.Label()]++
		}
	}
	for i := range out {
		out[i].Lo, out[i].Hi = stats.Wilson(out[i].Passed, out[i].Verdicts)
	}
	return out
}

// Counts is how many tails are finished (a verdict or none) and running, against the budget.
func (s *RunState) Counts() (done, running, budget int) {
	for _, t := range s.Tails {
		switch {
		case t.Status == StatusRunning:
			running++
		case Finished(t.Status):
			done++
		}
	}
	return done, running, s.Budget
}

// Cost is the run's total cost so far, in USD.
func (s *RunState) Cost() float64 {
	var c float64
	for _, t := range s.Tails {
		c += t.TotalUsage().Cost
	}
	return c
}

// TailIDs returns the tail ids in start order, optionally only those of one status.
func (s *RunState) TailIDs(status Status) []string {
	var out []string
	for _, id := range s.Order {
		if status == "" || s.Tails[id].Status == status {
			out = append(out, id)
		}
	}
	return out
}

// sum is the total of counts.
func sum(counts map[string]int) int {
	n := 0
	for _, c := range counts {
		n += c
	}
	return n
}
